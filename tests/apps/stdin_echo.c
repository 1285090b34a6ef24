/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stdin_echo: read lines from stdin with read(2) and answer each on stdout
 * with "echo N LINE" and on stderr with "err N", N counting from 1; on a
 * line "quit" print "bye N" and exit. A checkpoint finds it blocked in
 * read(0); after a restart its stdin, stdout and stderr must be those of
 * the restarting side (a pipe or a terminal), and N goes on.
 * At start it prints "ready tty=0|1" (whether stdin is a terminal).
 */
#include "app_util.h"

#define PROG "stdin_echo"

static char line[1024];
static size_t line_len;
static unsigned long count;

/* Handle one complete line; returns 1 on "quit". */
static int answer(void)
{
	line[line_len] = '\0';
	if (line_len && line[line_len - 1] == '\r')
		line[--line_len] = '\0';
	if (!strcmp(line, "quit")) {
		say("bye %lu", count);
		return 1;
	}
	count++;
	say("echo %lu %s", count, line);
	fprintf(stderr, "err %lu\n", count);
	fflush(stderr);
	return 0;
}

int main(void)
{
	char buf[256];

	say("ready tty=%d", isatty(0));
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf)), i;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die(PROG, "read of stdin: %s", strerror(errno));
		if (n == 0) {
			say("eof %lu", count);
			return 0;
		}
		for (i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (line_len < sizeof(line) - 1)
					line[line_len++] = buf[i];
				continue;
			}
			if (answer())
				return 0;
			line_len = 0;
		}
	}
}
