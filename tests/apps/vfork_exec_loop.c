/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vfork_exec_loop N: N times, vfork() a child that does what shells and
 * debuggers do between vfork and exec (it puts itself in a process group
 * of its own, named by its getpid()) and execs
 * `sh -c 'sleep 0.02; exit $(( K % 5 ))'`; the parent waits for it and
 * prints "step K status STATUS". At the end: "final SUM" of the
 * statuses. A child whose getpid() answers its parent's pid exits 101
 * before the exec, one whose setpgid fails exits 100: the statuses then
 * differ from an uninterrupted run's.
 */
#include <sys/wait.h>
#include "app_util.h"

#define PROG "vfork_exec_loop"

static pid_t start_child(unsigned long k, pid_t parent)
{
	char arg[32];
	pid_t pid;

	snprintf(arg, sizeof(arg), "%lu", k);
	pid = vfork();
	if (pid != 0)
		return pid;
	if (getpid() == parent)
		_exit(101);
	if (setpgid(getpid(), getpid()) < 0)
		_exit(100);
	execl("/bin/sh", "sh", "-c", "sleep 0.02; exit $(( $1 % 5 ))", "sh",
	      arg, (char *)NULL);
	_exit(127);
}

int main(int argc, char **argv)
{
	unsigned long n, k;
	pid_t parent = getpid();
	long sum = 0;
	int status;

	if (argc != 2)
		die(PROG, "usage: vfork_exec_loop N");
	n = parse_ulong(PROG, "N", argv[1], 1, 1000000);
	for (k = 1; k <= n; k++) {
		pid_t pid = start_child(k, parent);

		if (pid < 0)
			die(PROG, "vfork: %s", strerror(errno));
		if (waitpid(pid, &status, 0) != pid)
			die(PROG, "waitpid(%d): %s", (int)pid, strerror(errno));
		if (!WIFEXITED(status))
			die(PROG, "child %d: wait status %#x", (int)pid, status);
		sum += WEXITSTATUS(status);
		say("step %lu status %d", k, WEXITSTATUS(status));
	}
	say("final %ld", sum);
	return 0;
}
