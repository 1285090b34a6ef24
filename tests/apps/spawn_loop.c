/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * spawn_loop N MS: round i starts a child with posix_spawn and waits for
 * it by the pid posix_spawn returned. Odd rounds: posix_spawnp("sleep")
 * for MS milliseconds; even rounds: this program again, as
 * "spawn_loop --child PPID MS STATUS", which checks before and after
 * sleeping MS milliseconds that getppid() is PPID (the pid its parent
 * sees as its own) and exits STATUS, 99 on a mismatch. The parent checks
 * the pid and the status. Prints "round i ok", or "FAIL ..." and exits 1
 * at the first failure; "done" after round N. A child started after a
 * restart must be restored as its parent's child at the next restart.
 */
#include <spawn.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "spawn_loop"

extern char **environ;

static int run_child(char **argv)
{
	pid_t ppid = (pid_t)parse_ulong(PROG, "PPID", argv[2], 1, INT_MAX);
	unsigned long ms = parse_ulong(PROG, "MS", argv[3], 0, 60000);
	int status = (int)parse_ulong(PROG, "STATUS", argv[4], 0, 200);

	if (getppid() != ppid)
		return 99;
	sleep_ms(ms);
	return getppid() == ppid ? status : 99;
}

static pid_t start_child(unsigned long i, const char *ms_arg)
{
	char secs[32], ppid[32], status[32];
	char *sleep_argv[] = { "sleep", secs, NULL };
	char *self_argv[] = { PROG, "--child", ppid, (char *)ms_arg, status,
			      NULL };
	pid_t pid;
	int r;

	snprintf(secs, sizeof(secs), "%.3f", atol(ms_arg) / 1000.0);
	snprintf(ppid, sizeof(ppid), "%d", (int)getpid());
	snprintf(status, sizeof(status), "%lu", i % 100);
	if (i % 2)
		r = posix_spawnp(&pid, "sleep", NULL, NULL, sleep_argv,
				 environ);
	else
		r = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, self_argv,
				environ);
	errno = r;
	return r ? -1 : pid;
}

int main(int argc, char **argv)
{
	unsigned long n, i;

	if (argc == 5 && !strcmp(argv[1], "--child"))
		return run_child(argv);
	if (argc != 3)
		die(PROG, "usage: spawn_loop N MS");
	n = parse_ulong(PROG, "N", argv[1], 1, 1000000);
	parse_ulong(PROG, "MS", argv[2], 0, 60000);
	for (i = 1; i <= n; i++) {
		pid_t pid = start_child(i, argv[2]);
		int want = i % 2 ? 0 : (int)(i % 100);

		if (pid < 0) {
			say("FAIL round %lu: posix_spawn: %s", i,
			    strerror(errno));
			return 1;
		}
		if (reap_round_child(i, pid, want))
			return 1;
		say("round %lu ok", i);
	}
	say("done");
	return 0;
}
