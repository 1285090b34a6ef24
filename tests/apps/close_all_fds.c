/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * close_all_fds HOW N PAUSE_MS: open a file and a pipe of its own, then
 * close every descriptor above stderr the way daemons do as they start,
 * HOW being one of
 *   loop      close() of each number up to the descriptor limit
 *   range     close_range(3, ~0U, 0)
 *   from      closefrom(3)
 *   syscall   syscall(SYS_close_range, 3, ~0U, 0)
 * check that its own descriptors are closed and that no close() failed
 * but with EBADF, say "closed HOW", then count from 1 to N printing
 * "count K SUM" and sleeping PAUSE_MS, and print "done N SUM". A file it
 * opens after the closing (at the lowest free number) is read back at
 * the end: "file ok".
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "app_util.h"

#define PROG "close_all_fds"

static void close_by_loop(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		die(PROG, "getrlimit: %s", strerror(errno));
	for (int fd = 3; fd < (int)rl.rlim_cur; fd++)
		if (close(fd) < 0 && errno != EBADF)
			die(PROG, "close(%d): %s", fd, strerror(errno));
}

static void close_all(const char *how)
{
	if (!strcmp(how, "loop"))
		close_by_loop();
	else if (!strcmp(how, "range")) {
		if (close_range(3, ~0U, 0) < 0)
			die(PROG, "close_range: %s", strerror(errno));
	} else if (!strcmp(how, "from"))
		closefrom(3);
	else if (!strcmp(how, "syscall")) {
		if (syscall(SYS_close_range, 3, ~0U, 0) < 0)
			die(PROG, "syscall(close_range): %s", strerror(errno));
	} else
		die(PROG, "unknown way to close: %s", how);
}

int main(int argc, char **argv)
{
	int file, p[2], mine;
	unsigned long n, pause_ms, k;
	uint64_t sum = 0;
	char buf[16] = "";

	if (argc != 4)
		die(PROG, "usage: %s loop|range|from|syscall N PAUSE_MS", PROG);
	n = strtoul(argv[2], NULL, 10);
	pause_ms = strtoul(argv[3], NULL, 10);
	file = open("/dev/null", O_RDONLY);
	if (file < 0 || pipe(p) < 0)
		die(PROG, "open or pipe: %s", strerror(errno));
	close_all(argv[1]);
	expect_eq(PROG, "the file still open", fcntl(file, F_GETFD), -1);
	expect_eq(PROG, "the pipe still open", fcntl(p[0], F_GETFD) |
		  fcntl(p[1], F_GETFD), -1);
	mine = memfd_create("mine", 0);
	if (mine < 0 || write(mine, "kept", 4) != 4)
		die(PROG, "memfd: %s", strerror(errno));
	say("closed %s", argv[1]);
	for (k = 1; k <= n; k++) {
		sum = sum * 31 + k;
		say("count %lu %" PRIu64, k, sum);
		sleep_ms(pause_ms);
	}
	if (pread(mine, buf, 4, 0) != 4 || strcmp(buf, "kept"))
		die(PROG, "the memfd it opened after closing lost its bytes");
	say("file ok");
	say("done %lu %" PRIu64, n, sum);
	return 0;
}
