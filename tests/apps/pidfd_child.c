/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidfd_child TICKS PERIOD_MS CHILD_TICKS: opens a pidfd of itself,
 * which must never read as ended (in the children too, who inherit it:
 * there it is their parent's), then forks two children and holds a pidfd
 * of each (pidfd_open):
 *   "late"  prints "child tick I" up to CHILD_TICKS every PERIOD_MS, then
 *           "child done" and exits with 7;
 *   "early" exits with 5 at once; it is reaped only at the end.
 * Prints "pids LATE EARLY". The parent prints "tick I" up to TICKS every
 * PERIOD_MS, polling the late child's pidfd (no wait): once it is
 * readable, "late ended at I" and waitid(P_PIDFD) must give that child
 * with exit code 7. The early child's pidfd must be readable at every
 * tick. At the end: waitpid of the early child (exit 5), "OK pidfd_child".
 * A mismatch: one FAIL line, exit 1.
 */
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "app_util.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define ME "pidfd_child"

static int readable(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int r = poll(&p, 1, 0);

	if (r < 0 || (p.revents & (POLLNVAL | POLLERR))) {
		say("FAIL poll pidfd %d: r %d revents %#x", pidfd, r, p.revents);
		exit(1);
	}
	return r == 1 && (p.revents & POLLIN);
}

static void check_late_exit(int pidfd, pid_t late)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, pidfd, &si, WEXITED) < 0) {
		say("FAIL waitid P_PIDFD: %s", strerror(errno));
		exit(1);
	}
	expect_eq(ME, "late child's pid", si.si_pid, late);
	expect_eq(ME, "late child's code", si.si_code, CLD_EXITED);
	expect_eq(ME, "late child's status", si.si_status, 7);
}

static int self_fd;

static void check_parent_alive(unsigned long i)
{
	if (readable(self_fd)) {
		say("FAIL tick %lu: the parent's pidfd reads as ended", i);
		exit(1);
	}
}

static pid_t child(unsigned long ticks, unsigned long period, int code)
{
	pid_t pid = fork();

	if (pid < 0)
		die(ME, "fork: %s", strerror(errno));
	if (pid)
		return pid;
	for (unsigned long i = 1; i <= ticks; i++) {
		check_parent_alive(i);
		say("child tick %lu", i);
		sleep_ms(period);
	}
	if (ticks)
		say("child done");
	_exit(code);
}

int main(int argc, char **argv)
{
	unsigned long ticks, period, child_ticks, ended = 0;
	pid_t late, early;
	int late_fd, early_fd, status = 0;

	if (argc != 4)
		die(ME, "usage: pidfd_child TICKS PERIOD_MS CHILD_TICKS");
	ticks = parse_ulong(ME, "TICKS", argv[1], 1, 100000);
	period = parse_ulong(ME, "PERIOD_MS", argv[2], 1, 10000);
	child_ticks = parse_ulong(ME, "CHILD_TICKS", argv[3], 1, 100000);
	self_fd = syscall(SYS_pidfd_open, getpid(), 0);
	if (self_fd < 0)
		die(ME, "pidfd_open of itself: %s", strerror(errno));
	late = child(child_ticks, period, 7);
	early = child(0, 0, 5);
	late_fd = syscall(SYS_pidfd_open, late, 0);
	early_fd = syscall(SYS_pidfd_open, early, 0);
	if (late_fd < 0 || early_fd < 0)
		die(ME, "pidfd_open: %s", strerror(errno));
	while (!readable(early_fd))
		sleep_ms(10);
	say("pids %d %d", (int)late, (int)early);
	for (unsigned long i = 1; i <= ticks; i++) {
		check_parent_alive(i);
		if (!readable(early_fd)) {
			say("FAIL tick %lu: the early child's pidfd is not "
			    "readable", i);
			return 1;
		}
		if (!ended && readable(late_fd)) {
			check_late_exit(late_fd, late);
			ended = i;
			say("late ended at %lu", i);
		}
		say("tick %lu", i);
		sleep_ms(period);
	}
	if (!ended) {
		say("FAIL the late child's pidfd never became readable");
		return 1;
	}
	if (waitpid(early, &status, 0) != early || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 5) {
		say("FAIL waitpid early child: status %#x", status);
		return 1;
	}
	say("OK pidfd_child");
	return 0;
}
