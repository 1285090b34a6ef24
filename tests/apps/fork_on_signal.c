/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork_on_signal TICKS: prints "pid P", then "tick N" every 50 ms. On each
 * SIGUSR1 it forks at once (the signal ends its sleep) a child that prints "child getpid C" and exits 7; the
 * parent prints "forked F waited W status S kill_self K", where F is what
 * fork returned, W what waitpid(F) returned, S the exit status and K
 * whether kill(P, 0) still reaches the parent itself (getpid() == P).
 */
#include <signal.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "fork_on_signal"

static volatile sig_atomic_t asked;

static void on_usr1(int sig)
{
	(void)sig;
	asked++;
}

static void fork_one(pid_t self)
{
	int status = -1;
	pid_t f = fork(), w;

	if (f < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (f == 0) {
		say("child getpid %d", (int)getpid());
		_exit(7);
	}
	w = waitpid(f, &status, 0);
	say("forked %d waited %d status %d kill_self %d", (int)f, (int)w,
	    WIFEXITED(status) ? WEXITSTATUS(status) : -1,
	    kill(self, 0) == 0 && getpid() == self);
}

int main(int argc, char **argv)
{
	unsigned long ticks;
	sig_atomic_t done = 0;
	pid_t self = getpid();

	if (argc != 2)
		die(PROG, "usage: fork_on_signal TICKS");
	ticks = parse_ulong(PROG, "TICKS", argv[1], 1, 1000000);
	signal(SIGUSR1, on_usr1);
	say("pid %d", (int)self);
	for (unsigned long k = 1; k <= ticks; k++) {
		struct timespec left = { 0, 50 * 1000000L };

		say("tick %lu", k);
		/* a SIGUSR1 ends the sleep: the fork follows it at once, so
		 * that the pid the test offers is still free */
		do {
			while (done < asked) {
				done++;
				fork_one(self);
			}
		} while (nanosleep(&left, &left) == -1 && errno == EINTR);
	}
	say("done");
	return 0;
}
