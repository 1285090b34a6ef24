/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * file_offset_log INPUT LOG PAUSE_MS [GATE_AFTER GATE_PATH]: read INPUT
 * sequentially with small read()s of 1 to 7 bytes (so the file offset is
 * usually in the middle of a record), and for each complete line append
 * "got <line>" to LOG, opened O_APPEND, sleeping PAUSE_MS between records.
 *
 * With GATE_AFTER, after that many records the program prints
 * "gate after record N" and waits (up to 300 s) for GATE_PATH to exist:
 * a checkpoint taken there has no record in flight, so after a restart
 * the log must hold every record exactly once.
 *
 * Output: "record N" per record; at the end "records N bytes B offset O
 * digest HEX", where O is the input's file offset seen by lseek().
 */
#include <fcntl.h>
#include <sys/stat.h>
#include "app_util.h"

#define PROG "file_offset_log"
#define LINE_MAX_BYTES 4096

static int in_fd, log_fd;
static char line[LINE_MAX_BYTES];
static size_t line_len;
static unsigned long records, bytes_read;
static uint64_t digest = FNV1A_INIT;

static void write_all(int fd, const char *buf, size_t len, const char *what)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die(PROG, "write to %s: %s", what, strerror(errno));
		buf += n;
		len -= (size_t)n;
	}
}

static void wait_for_gate(const char *gate_path)
{
	unsigned long waited_ms = 0;

	say("gate after record %lu", records);
	while (access(gate_path, F_OK) != 0) {
		if (waited_ms >= 300000)
			die(PROG, "gate %s: did not appear within 300 s",
			    gate_path);
		sleep_ms(10);
		waited_ms += 10;
	}
}

static void log_record(const char *log_path)
{
	char out[LINE_MAX_BYTES + 8];
	int n;

	n = snprintf(out, sizeof(out), "got %.*s\n", (int)line_len, line);
	write_all(log_fd, out, (size_t)n, log_path);
	records++;
	say("record %lu", records);
}

int main(int argc, char **argv)
{
	unsigned long pause_ms, gate_after = 0, chunk = 0;
	const char *gate_path = NULL;
	char buf[8];
	off_t offset;

	if (argc != 4 && argc != 6)
		die(PROG, "usage: file_offset_log INPUT LOG PAUSE_MS "
		    "[GATE_AFTER GATE_PATH]");
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[3], 0, 10000);
	if (argc == 6) {
		gate_after = parse_ulong(PROG, "GATE_AFTER", argv[4], 1,
					 1UL << 30);
		gate_path = argv[5];
	}
	in_fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (in_fd < 0)
		die(PROG, "open %s: %s", argv[1], strerror(errno));
	log_fd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (log_fd < 0)
		die(PROG, "open %s: %s", argv[2], strerror(errno));
	say("reading %s", argv[1]);
	for (;;) {
		size_t want = 1 + chunk++ % 7, i;
		ssize_t n = read(in_fd, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die(PROG, "read %s: %s", argv[1], strerror(errno));
		if (n == 0)
			break;
		bytes_read += (size_t)n;
		digest = fnv1a(digest, buf, (size_t)n);
		for (i = 0; i < (size_t)n; i++) {
			if (buf[i] != '\n') {
				if (line_len == sizeof(line))
					die(PROG, "%s: line longer than %d bytes",
					    argv[1], LINE_MAX_BYTES);
				line[line_len++] = buf[i];
				continue;
			}
			if (gate_path && records == gate_after)
				wait_for_gate(gate_path);
			log_record(argv[2]);
			line_len = 0;
			sleep_ms(pause_ms);
		}
	}
	if (line_len)
		die(PROG, "%s: last line has no newline", argv[1]);
	offset = lseek(in_fd, 0, SEEK_CUR);
	say("records %lu bytes %lu offset %lld digest %016" PRIx64, records,
	    bytes_read, (long long)offset, digest);
	return 0;
}
