/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork_forest ITER DELAY_MS: 64 processes: the root forks 7 children,
 * each of which forks 8 grandchildren. Every process counts to ITER
 * (sleeping DELAY_MS per step, checking getppid() against the pid its
 * parent had), then a grandchild exits with 10 + its index, a child reaps
 * its 8 grandchildren by their stored pids, checks their statuses and
 * exits with 20 + its index, and the root reaps its children the same
 * way. The root prints "root I" per step, "tree of 64 processes" once all
 * are forked, and last "OK forest 64". Any mismatch prints "FAIL ...".
 */
#include <sys/wait.h>
#include "app_util.h"

#define CHILDREN	7
#define GRANDCHILDREN	8

static unsigned long iters, delay_ms;

static void fail(const char *what, long got, long want)
{
	say("FAIL pid %d: %s: got %ld, want %ld", (int)getpid(), what, got,
	    want);
	exit(1);
}

static void count(pid_t parent, int verbose)
{
	for (unsigned long i = 1; i <= iters; i++) {
		if (getppid() != parent)
			fail("getppid", getppid(), parent);
		if (verbose)
			say("root %lu", i);
		sleep_ms(delay_ms);
	}
}

static void reap(const pid_t *kids, int n, int base)
{
	for (int i = 0; i < n; i++) {
		int status = 0;
		pid_t r;

		while ((r = waitpid(kids[i], &status, 0)) < 0 && errno == EINTR)
			;
		if (r != kids[i])
			fail("waitpid", r, kids[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != base + i)
			fail("exit status", status, (base + i) << 8);
	}
}

static pid_t fork_or_die(void)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork_forest", "fork: %s", strerror(errno));
	return pid;
}

static void child(int index)
{
	pid_t self = getpid(), parent = getppid(), kids[GRANDCHILDREN];

	for (int i = 0; i < GRANDCHILDREN; i++) {
		kids[i] = fork_or_die();
		if (kids[i] == 0) {
			count(self, 0);
			exit(10 + i);
		}
	}
	count(parent, 0);
	reap(kids, GRANDCHILDREN, 10);
	exit(20 + index);
}

int main(int argc, char **argv)
{
	pid_t kids[CHILDREN];

	if (argc != 3)
		die("fork_forest", "usage: fork_forest ITER DELAY_MS");
	iters = parse_ulong("fork_forest", "ITER", argv[1], 1, 1000000);
	delay_ms = parse_ulong("fork_forest", "DELAY_MS", argv[2], 0, 10000);
	for (int i = 0; i < CHILDREN; i++) {
		kids[i] = fork_or_die();
		if (kids[i] == 0)
			child(i);
	}
	say("tree of %d processes", 1 + CHILDREN * (1 + GRANDCHILDREN));
	count(getppid(), 1);
	reap(kids, CHILDREN, 20);
	say("OK forest %d", 1 + CHILDREN * (1 + GRANDCHILDREN));
	return 0;
}
