/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zombie_wait ITER DELAY_MS: fork three children that end at once (exit
 * 3, exit 5, killed by SIGTERM), wait (without reaping, waitid WNOWAIT)
 * until all three have ended, print "zombies <pid> <pid> <pid>", count to
 * ITER printing "iter I", then reap each by its stored pid with waitpid
 * and check how it ended. Last line "OK zombies"; a mismatch prints
 * "FAIL ..." and exits 1.
 */
#include <signal.h>
#include <sys/wait.h>
#include "app_util.h"

static pid_t spawn(int how)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("zombie_wait", "fork: %s", strerror(errno));
	if (pid == 0) {
		if (how < 0) {
			signal(-how, SIG_DFL);
			raise(-how);
		}
		_exit(how);
	}
	return pid;
}

static void wait_ended(pid_t pid)
{
	for (int i = 0; i < 10000; i++) {
		siginfo_t si = { 0 };

		if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == pid)
			return;
		sleep_ms(1);
	}
	die("zombie_wait", "child %d did not end", (int)pid);
}

int main(int argc, char **argv)
{
	static const int how[3] = { 3, 5, -SIGTERM };
	unsigned long iters, delay;
	pid_t kids[3];

	if (argc != 3)
		die("zombie_wait", "usage: zombie_wait ITER DELAY_MS");
	iters = parse_ulong("zombie_wait", "ITER", argv[1], 1, 1000000);
	delay = parse_ulong("zombie_wait", "DELAY_MS", argv[2], 0, 10000);
	for (int i = 0; i < 3; i++)
		kids[i] = spawn(how[i]);
	for (int i = 0; i < 3; i++)
		wait_ended(kids[i]);
	say("zombies %d %d %d", (int)kids[0], (int)kids[1], (int)kids[2]);
	for (unsigned long i = 1; i <= iters; i++) {
		say("iter %lu", i);
		sleep_ms(delay);
	}
	for (int i = 0; i < 3; i++) {
		int status = 0;
		pid_t r = waitpid(kids[i], &status, 0);
		int ok = how[i] >= 0 ?
			 WIFEXITED(status) && WEXITSTATUS(status) == how[i] :
			 WIFSIGNALED(status) && WTERMSIG(status) == -how[i];

		if (r != kids[i] || !ok) {
			say("FAIL child %d: waitpid returned %d, status %#x",
			    (int)kids[i], (int)r, status);
			return 1;
		}
	}
	say("OK zombies");
	return 0;
}
