/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork_exec_storm N: the computation changes all the time, so checkpoints
 * land in the middle of fork, exec and exit. Round i: fork a child that
 * execs this program as "fork_exec_storm --child i" (or, every third
 * round, with posix_spawn); the child execs once more into
 * "--grandchild i", which exits with status i % 200; the parent waits for
 * that pid and checks the status. Prints "round i ok" or "FAIL ..." and
 * exits 1 at the first failure; "done" after round N.
 */
#include <spawn.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "fork_exec_storm"

extern char **environ;

static void exec_self(const char *self, const char *role, unsigned long i)
{
	char num[32];

	snprintf(num, sizeof(num), "%lu", i);
	execl(self, PROG, role, num, (char *)NULL);
	die(PROG, "exec %s: %s", self, strerror(errno));
}

static pid_t start_child(const char *self, unsigned long i)
{
	char num[32], *argv[] = { PROG, "--child", num, NULL };
	pid_t pid;

	if (i % 3 == 0) {
		snprintf(num, sizeof(num), "%lu", i);
		errno = posix_spawn(&pid, self, NULL, NULL, argv, environ);
		return errno ? -1 : pid;
	}
	pid = fork();
	if (pid == 0)
		exec_self(self, "--child", i);
	return pid;
}

int main(int argc, char **argv)
{
	unsigned long n, i;

	if (argc == 3 && !strcmp(argv[1], "--child"))
		exec_self("/proc/self/exe", "--grandchild",
			  parse_ulong(PROG, "I", argv[2], 0, ULONG_MAX));
	if (argc == 3 && !strcmp(argv[1], "--grandchild"))
		return (int)(parse_ulong(PROG, "I", argv[2], 0, ULONG_MAX) %
			     200);
	if (argc != 2)
		die(PROG, "usage: fork_exec_storm N");
	n = parse_ulong(PROG, "N", argv[1], 1, 1000000);
	for (i = 1; i <= n; i++) {
		pid_t pid = start_child("/proc/self/exe", i);

		if (pid < 0) {
			say("FAIL round %lu: start: %s", i, strerror(errno));
			return 1;
		}
		if (reap_round_child(i, pid, (int)(i % 200)))
			return 1;
		say("round %lu ok", i);
	}
	say("done");
	return 0;
}
