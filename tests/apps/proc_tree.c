/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proc_tree ITER DELAY_MS: a tree of four processes that name each other
 * by the pids they stored before any checkpoint.
 *
 *   parent ── child1 ── grandchild     (grandchild exits 3, child1 reaps
 *          └─ child2                    it by its stored pid and exits 7)
 *
 * Every process prints "<name> <i>" for i = 1..ITER and checks on each
 * step that getppid() is the pid its parent had. child2 loops until the
 * parent sends SIGTERM to its stored pid (exits 9). The parent checks
 * kill(pid, 0), getpgid(), getsid(), sched_getaffinity() and pidfd_open()
 * on its children on each step, then reaps
 * child1 and child2 by their stored pids with waitpid and checks their
 * statuses. Last line: "OK tree". Any mismatch prints "FAIL ..." and
 * exits 1.
 */
#include <sched.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include "app_util.h"

static unsigned long iters, delay_ms;
static volatile sig_atomic_t term;

static void on_term(int sig)
{
	(void)sig;
	term = 1;
}

static void fail(const char *who, const char *what, long got, long want)
{
	say("FAIL %s: %s: got %ld, want %ld", who, what, got, want);
	exit(1);
}

static void steps(const char *who, pid_t parent)
{
	for (unsigned long i = 1; i <= iters; i++) {
		if (getppid() != parent)
			fail(who, "getppid", getppid(), parent);
		say("%s %lu", who, i);
		sleep_ms(delay_ms);
	}
}

static void reap(const char *who, pid_t child, int want_status)
{
	int status = 0;
	pid_t r;

	do {
		r = waitpid(child, &status, 0);
	} while (r < 0 && errno == EINTR);
	if (r != child)
		fail(who, "waitpid returned", r, child);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != want_status)
		fail(who, "child exit status", status, want_status << 8);
}

/* Other calls that name a process: the pid stored before a restart must
 * reach the same child. */
static void check_by_pid(pid_t child)
{
	cpu_set_t set;
	int fd;

	if (sched_getaffinity(child, sizeof(set), &set) != 0)
		fail("parent", "sched_getaffinity(child1) errno", errno, 0);
	fd = pidfd_open(child, 0);
	if (fd < 0)
		fail("parent", "pidfd_open(child1) errno", errno, 0);
	close(fd);
	if (getsid(child) != getsid(0))
		fail("parent", "getsid(child1)", getsid(child), getsid(0));
}

static pid_t spawn(void (*body)(pid_t), const char *who)
{
	pid_t self = getpid(), pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("proc_tree", "%s: fork: %s", who, strerror(errno));
	if (pid == 0) {
		body(self);
		exit(0);
	}
	return pid;
}

static void grandchild(pid_t parent)
{
	steps("grandchild", parent);
	exit(3);
}

static void child1(pid_t parent)
{
	pid_t g = spawn(grandchild, "grandchild");

	say("child1 has grandchild %d", (int)g);
	steps("child1", parent);
	reap("child1", g, 3);
	exit(7);
}

static void child2(pid_t parent)
{
	unsigned long i = 0;

	signal(SIGTERM, on_term);
	while (!term) {
		if (getppid() != parent)
			fail("child2", "getppid", getppid(), parent);
		if (++i % 10 == 0)
			say("child2 alive %lu", i);
		sleep_ms(delay_ms);
	}
	exit(9);
}

int main(int argc, char **argv)
{
	pid_t c1, c2;

	if (argc != 3)
		die("proc_tree", "usage: proc_tree ITER DELAY_MS");
	iters = parse_ulong("proc_tree", "ITER", argv[1], 1, 1000000);
	delay_ms = parse_ulong("proc_tree", "DELAY_MS", argv[2], 0, 10000);
	c1 = spawn(child1, "child1");
	c2 = spawn(child2, "child2");
	say("start parent %d child1 %d child2 %d", (int)getpid(), (int)c1,
	    (int)c2);
	for (unsigned long i = 1; i <= iters; i++) {
		if (kill(c1, 0) != 0)
			fail("parent", "kill(child1, 0) errno", errno, 0);
		if (kill(c2, 0) != 0)
			fail("parent", "kill(child2, 0) errno", errno, 0);
		if (getpgid(c2) != getpgrp())
			fail("parent", "getpgid(child2)", getpgid(c2),
			     getpgrp());
		check_by_pid(c1);
		say("parent %lu", i);
		sleep_ms(delay_ms);
	}
	reap("parent", c1, 7);
	if (kill(c2, SIGTERM) != 0)
		fail("parent", "kill(child2, SIGTERM) errno", errno, 0);
	reap("parent", c2, 9);
	say("OK tree");
	return 0;
}
