/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vfork_pid N MS: round i vforks. The child records getpid() and
 * getppid() and makes itself a process group leader with
 * setpgid(getpid(), getpid()), as shells and gdb do; in odd rounds it
 * then execs this program as "vfork_pid --child PPID MS STATUS" (which
 * checks getppid() and that it leads its group, sleeps MS milliseconds,
 * checks again and exits STATUS, 99 on a mismatch), in even rounds it
 * exits STATUS at once. The parent checks that the child's getpid() was
 * vfork's return value, its getppid() the parent's getpid(), that
 * setpgid succeeded, and the status. "round i ok pid P" or "FAIL ..."
 * and exit 1; "done" after round N.
 */
#include <sys/wait.h>
#include "app_util.h"

#define PROG "vfork_pid"

/* written by the vfork child, which runs on the parent's memory */
static volatile pid_t child_pid, child_ppid;
static volatile int setpgid_errno;

static int run_child(char **argv)
{
	pid_t ppid = (pid_t)parse_ulong(PROG, "PPID", argv[2], 1, INT_MAX);
	unsigned long ms = parse_ulong(PROG, "MS", argv[3], 0, 60000);
	int status = (int)parse_ulong(PROG, "STATUS", argv[4], 0, 200);

	if (getppid() != ppid || getpgrp() != getpid())
		return 99;
	sleep_ms(ms);
	return getppid() == ppid && getpgrp() == getpid() ? status : 99;
}

static pid_t start_child(unsigned long i, const char *ms_arg)
{
	char ppid[32], status[32];
	pid_t pid;

	snprintf(ppid, sizeof(ppid), "%d", (int)getpid());
	snprintf(status, sizeof(status), "%lu", i % 100);
	child_pid = child_ppid = 0;
	setpgid_errno = -1;
	pid = vfork();
	if (pid != 0)
		return pid;
	child_pid = getpid();
	child_ppid = getppid();
	setpgid_errno = setpgid(getpid(), getpid()) == 0 ? 0 : errno;
	if (i % 2)
		execl("/proc/self/exe", PROG, "--child", ppid, ms_arg, status,
		      (char *)NULL);
	_exit((int)(i % 100));
}

int main(int argc, char **argv)
{
	unsigned long n, i;

	if (argc == 5 && !strcmp(argv[1], "--child"))
		return run_child(argv);
	if (argc != 3)
		die(PROG, "usage: vfork_pid N MS");
	n = parse_ulong(PROG, "N", argv[1], 1, 1000000);
	parse_ulong(PROG, "MS", argv[2], 0, 60000);
	for (i = 1; i <= n; i++) {
		pid_t pid = start_child(i, argv[2]);

		if (pid < 0) {
			say("FAIL round %lu: vfork: %s", i, strerror(errno));
			return 1;
		}
		if (child_pid != pid || child_ppid != getpid() ||
		    setpgid_errno) {
			say("FAIL round %lu: vfork returned %d, the child's "
			    "getpid() %d, getppid() %d (parent %d), setpgid: "
			    "%s", i, (int)pid, (int)child_pid,
			    (int)child_ppid, (int)getpid(),
			    strerror(setpgid_errno));
			return 1;
		}
		if (reap_round_child(i, pid, (int)(i % 100)))
			return 1;
		say("round %lu ok pid %d", i, (int)pid);
		sleep_ms(10);
	}
	say("done");
	return 0;
}
