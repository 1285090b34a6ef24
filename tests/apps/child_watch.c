/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * child_watch N PAUSE_MS: a program with no children that watches for
 * any: every step it calls waitpid(-1, WNOHANG) and counts
 * what it reaps, and counts the SIGCHLD it gets. Prints "tick K
 * sigchld S reaped R" after each step, "done N sigchld S reaped R" at
 * the end. A checkpoint's helper processes must be no child it can see:
 * S and R stay 0.
 */
#include <signal.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "child_watch"

static volatile sig_atomic_t sigchld_count;

static void on_sigchld(int sig)
{
	(void)sig;
	sigchld_count++;
}

int main(int argc, char **argv)
{
	unsigned long n, pause_ms, k, reaped = 0;
	struct sigaction sa;

	if (argc != 3)
		die(PROG, "usage: child_watch N PAUSE_MS");
	n = parse_ulong(PROG, "N", argv[1], 1, 1UL << 30);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[2], 0, 60000);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGCHLD, &sa, NULL);
	for (k = 1; k <= n; k++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			reaped++;
		say("tick %lu sigchld %d reaped %lu", k, (int)sigchld_count,
		    reaped);
		sleep_ms(pause_ms);
	}
	say("done %lu sigchld %d reaped %lu", n, (int)sigchld_count, reaped);
	return 0;
}
