/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * log_appender LOG LINES PAUSE_MS [WRITERS]: append "<w> line <n>" lines
 * to LOG, opened O_WRONLY | O_APPEND | O_CREAT, one write() per line,
 * sleeping PAUSE_MS between lines: an append-only log, as a server keeps.
 * With WRITERS = 2, a child forked after the open appends its own lines
 * ("b line <n>") through the same open file description as the parent's
 * ("a line <n>").
 *
 * Output: "line N" per line of the parent; "done" after the child exited.
 */
#include <fcntl.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "log_appender"

static void append_lines(int fd, char who, unsigned long lines,
			 unsigned long pause_ms, int report)
{
	char buf[64];

	for (unsigned long n = 1; n <= lines; n++) {
		int len = snprintf(buf, sizeof(buf), "%c line %lu\n", who, n);
		ssize_t w;

		do {
			w = write(fd, buf, (size_t)len);
		} while (w < 0 && errno == EINTR);
		if (w != len)
			die(PROG, "write: %s", w < 0 ? strerror(errno) :
			    "short write");
		if (report)
			say("line %lu", n);
		sleep_ms(pause_ms);
	}
}

int main(int argc, char **argv)
{
	unsigned long lines, pause_ms, writers = 1;
	pid_t child = 0;
	int fd, status;

	if (argc != 4 && argc != 5)
		die(PROG, "usage: log_appender LOG LINES PAUSE_MS [WRITERS]");
	lines = parse_ulong(PROG, "LINES", argv[2], 1, 1000000);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[3], 0, 10000);
	if (argc == 5)
		writers = parse_ulong(PROG, "WRITERS", argv[4], 1, 2);
	fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		die(PROG, "open %s: %s", argv[1], strerror(errno));
	if (writers == 2) {
		child = fork();
		if (child < 0)
			die(PROG, "fork: %s", strerror(errno));
		if (child == 0) {
			append_lines(fd, 'b', lines, pause_ms, 0);
			return 0;
		}
	}
	append_lines(fd, 'a', lines, pause_ms, 1);
	if (child && (waitpid(child, &status, 0) != child ||
		      !WIFEXITED(status) || WEXITSTATUS(status)))
		die(PROG, "the child failed");
	say("done");
	return 0;
}
