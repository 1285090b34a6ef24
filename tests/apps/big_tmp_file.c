/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * big_tmp_file PATH MIB STEPS PAUSE_MS: a large scratch file (a sort's
 * temporary run, a compiler's output) kept open while it is worked on.
 * Creates PATH with MIB MiB of deterministic bytes and keeps it open
 * O_RDWR; step N writes mix64(N) at offset N * 64 KiB (modulo the size).
 *
 * Output: "step N" per step, then "digest HEX" of the whole file read
 * through the open descriptor.
 */
#include <fcntl.h>
#include "app_util.h"

#define PROG "big_tmp_file"
#define CHUNK (1 << 20)

static void pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die(PROG, "pwrite: %s", strerror(errno));
		p += n;
		off += n;
		len -= (size_t)n;
	}
}

static void fill(int fd, unsigned long mib)
{
	static uint64_t buf[CHUNK / 8];
	uint64_t state = 42;

	for (unsigned long m = 0; m < mib; m++) {
		for (size_t i = 0; i < CHUNK / 8; i++)
			buf[i] = splitmix64(&state);
		pwrite_all(fd, buf, CHUNK, (off_t)m * CHUNK);
	}
}

static uint64_t digest(int fd, unsigned long mib)
{
	static char buf[CHUNK];
	uint64_t h = FNV1A_INIT;

	for (unsigned long m = 0; m < mib; m++) {
		ssize_t n = pread(fd, buf, CHUNK, (off_t)m * CHUNK);

		if (n != CHUNK)
			die(PROG, "pread MiB %lu: %s", m,
			    n < 0 ? strerror(errno) : "short read");
		h = fnv1a(h, buf, CHUNK);
	}
	return h;
}

int main(int argc, char **argv)
{
	unsigned long mib, steps, pause_ms;
	int fd;

	if (argc != 5)
		die(PROG, "usage: big_tmp_file PATH MIB STEPS PAUSE_MS");
	mib = parse_ulong(PROG, "MIB", argv[2], 1, 4096);
	steps = parse_ulong(PROG, "STEPS", argv[3], 1, 1000000);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[4], 0, 10000);
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die(PROG, "open %s: %s", argv[1], strerror(errno));
	fill(fd, mib);
	for (unsigned long n = 1; n <= steps; n++) {
		uint64_t v = mix64(n);

		pwrite_all(fd, &v, sizeof(v),
			   (off_t)((n * 65536) % (mib * CHUNK)));
		say("step %lu", n);
		sleep_ms(pause_ms);
	}
	say("digest %016" PRIx64, digest(fd, mib));
	return 0;
}
