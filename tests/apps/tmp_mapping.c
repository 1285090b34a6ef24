/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tmp_mapping PATH STEPS PAUSE_MS [UNLINK_AT]: a file mapped MAP_SHARED by
 * two processes, the way a JVM maps /tmp/hsperfdata_<user>/<pid>.
 *
 * The parent creates PATH (64 KiB), maps it MAP_SHARED and closes it; the
 * child opens and maps PATH on its own. They take turns through the file:
 * step N is done by the parent when N is odd, by the child when it is
 * even, each waiting (up to 60 s) for the other's step to appear in the
 * file, and writing slot N = mix64(N). Before each step the process
 * checks every earlier slot: the content must be exact. With UNLINK_AT
 * (odd, >= 3: the child has mapped PATH by then), the parent unlinks PATH
 * after that step (the mappings live on).
 *
 * Output: "step N" per step (both processes), then from the parent
 * "digest HEX" of the whole mapping after the child exited.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "tmp_mapping"
#define MAP_BYTES (64 * 1024)
#define MAX_STEPS (MAP_BYTES / 8 - 1)

struct shared_file {
	volatile uint64_t done;		/* last step written */
	volatile uint64_t slot[MAX_STEPS];
};

static struct shared_file *map_path(const char *path, int create)
{
	int fd = open(path, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0600);
	void *p;

	if (fd < 0)
		die(PROG, "open %s: %s", path, strerror(errno));
	if (create && ftruncate(fd, MAP_BYTES) < 0)
		die(PROG, "ftruncate %s: %s", path, strerror(errno));
	p = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die(PROG, "mmap %s: %s", path, strerror(errno));
	close(fd);
	return p;
}

static void check_slots(const char *who, struct shared_file *f, uint64_t n)
{
	for (uint64_t i = 1; i < n; i++)
		if (f->slot[i] != mix64(i))
			die(PROG, "%s: slot %llu holds %016llx, expected %016llx",
			    who, (unsigned long long)i,
			    (unsigned long long)f->slot[i],
			    (unsigned long long)mix64(i));
}

static void wait_turn(const char *who, struct shared_file *f, uint64_t n)
{
	unsigned long waited_ms = 0;

	while (f->done != n - 1) {
		if (waited_ms >= 60000)
			die(PROG, "%s: step %llu: the other process's step did "
			    "not appear in the file within 60 s (done %llu): "
			    "the mapping is not shared", who,
			    (unsigned long long)n,
			    (unsigned long long)f->done);
		sleep_ms(1);
		waited_ms++;
	}
}

static void take_turns(const char *who, struct shared_file *f, int parity,
		       uint64_t steps, unsigned long pause_ms,
		       const char *path, uint64_t unlink_at)
{
	for (uint64_t n = 1; n <= steps; n++) {
		if ((int)(n % 2) != parity)
			continue;
		wait_turn(who, f, n);
		check_slots(who, f, n);
		f->slot[n] = mix64(n);
		/* Printed before the other process may take its turn: the
		 * lines of the two processes come out in step order. */
		say("step %llu", (unsigned long long)n);
		__atomic_store_n(&f->done, n, __ATOMIC_RELEASE);
		if (n == unlink_at && unlink(path) < 0)
			die(PROG, "unlink %s: %s", path, strerror(errno));
		sleep_ms(pause_ms);
	}
}

int main(int argc, char **argv)
{
	unsigned long steps, pause_ms, unlink_at = 0;
	struct shared_file *f;
	int status;
	pid_t child;

	if (argc != 4 && argc != 5)
		die(PROG, "usage: tmp_mapping PATH STEPS PAUSE_MS [UNLINK_AT]");
	steps = parse_ulong(PROG, "STEPS", argv[2], 2, MAX_STEPS);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[3], 0, 10000);
	if (argc == 5)
		unlink_at = parse_ulong(PROG, "UNLINK_AT", argv[4], 3, steps);
	if (unlink_at && unlink_at % 2 == 0)
		die(PROG, "UNLINK_AT must be odd (a step of the parent)");
	f = map_path(argv[1], 1);
	child = fork();
	if (child < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (child == 0) {
		take_turns("child", map_path(argv[1], 0), 0, steps, pause_ms,
			   argv[1], 0);
		return 0;
	}
	take_turns("parent", f, 1, steps, pause_ms, argv[1], unlink_at);
	if (waitpid(child, &status, 0) != child)
		die(PROG, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die(PROG, "the child failed (status %#x)", status);
	check_slots("parent", f, steps + 1);
	say("digest %016" PRIx64, fnv1a(FNV1A_INIT, (const void *)f, MAP_BYTES));
	return 0;
}
