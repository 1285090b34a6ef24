/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * child_leaves STOPFILE ITER DELAY_MS: fork a child that prints "child I"
 * every DELAY_MS until STOPFILE exists, then prints "child leaves at I"
 * and exits 3. The parent prints "parent I" up to ITER, reaps the child
 * by its stored pid as soon as it has exited ("reaped child, status 3"),
 * and ends with "OK child_leaves". A child that never leaves, or leaves
 * another way, is a "FAIL ..." line and exit 1.
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include "app_util.h"

static void child_loop(const char *stopfile, unsigned long delay)
{
	struct stat st;

	for (unsigned long i = 1;; i++) {
		if (stat(stopfile, &st) == 0) {
			say("child leaves at %lu", i);
			_exit(3);
		}
		say("child %lu", i);
		sleep_ms(delay);
	}
}

int main(int argc, char **argv)
{
	unsigned long iters, delay;
	int reaped = 0, status = 0;
	pid_t child;

	if (argc != 4)
		die("child_leaves", "usage: child_leaves STOPFILE ITER "
		    "DELAY_MS");
	iters = parse_ulong("child_leaves", "ITER", argv[2], 1, 1000000);
	delay = parse_ulong("child_leaves", "DELAY_MS", argv[3], 1, 10000);
	fflush(stdout);
	child = fork();
	if (child < 0)
		die("child_leaves", "fork: %s", strerror(errno));
	if (child == 0)
		child_loop(argv[1], delay);
	for (unsigned long i = 1; i <= iters; i++) {
		say("parent %lu", i);
		if (!reaped && waitpid(child, &status, WNOHANG) == child) {
			reaped = 1;
			say("reaped child, status %d", WIFEXITED(status) ?
			    WEXITSTATUS(status) : -1);
		}
		sleep_ms(delay);
	}
	if (!reaped) {
		say("FAIL the child did not leave");
		return 1;
	}
	say("OK child_leaves");
	return 0;
}
