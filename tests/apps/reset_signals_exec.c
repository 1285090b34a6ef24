/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * reset_signals_exec PROGRAM [ARG...]: start PROGRAM the way git's
 * run-command does: every signal blocked around fork; in the child every
 * signal 1..64 set back to SIG_DFL with signal() (SIG_IGN kept), the mask
 * restored, then exec. The parent waits and prints "child exit N".
 */
#include <signal.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "reset_signals_exec"

static void reset_every_signal(void)
{
	for (int sig = 1; sig < 65; sig++) {
		sighandler_t was = signal(sig, SIG_DFL);

		if (was == SIG_IGN)
			signal(sig, SIG_IGN);
	}
}

int main(int argc, char **argv)
{
	sigset_t all, old;
	int status;
	pid_t pid;

	if (argc < 2)
		die(PROG, "usage: reset_signals_exec PROGRAM [ARG...]");
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (pid == 0) {
		reset_every_signal();
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		execv(argv[1], argv + 1);
		die(PROG, "exec %s: %s", argv[1], strerror(errno));
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die(PROG, "waitpid: %s", strerror(errno));
	say("child exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}
