/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork_compute_loop N: forks in a tight loop, and each child computes
 * without calling anything ckpt wraps until it reports: round i forks a
 * child that runs splitmix64 from seed i for a varying number of steps
 * (a few milliseconds), writes the result to a pipe and exits with
 * status i % 200; the parent computes the same value itself, reads the
 * child's, checks both and the status. So a checkpoint often finds a
 * child that has done nothing since its fork but compute (the child a
 * lazily started manager would not have a manager in). Prints
 * "round i ok" or "FAIL ..." and exits 1 at the first failure; "done"
 * after round N.
 */
#include "app_util.h"

#define PROG "fork_compute_loop"

static uint64_t compute(unsigned long i)
{
	uint64_t state = i, v = 0;
	unsigned long steps = 200000 + (i % 7) * 100000;

	for (unsigned long k = 0; k < steps; k++)
		v ^= splitmix64(&state);
	return v;
}

static void child(int wfd, unsigned long i)
{
	uint64_t v = compute(i);

	if (write(wfd, &v, sizeof(v)) != sizeof(v))
		_exit(255);
	_exit((int)(i % 200));
}

static uint64_t read_result(int rfd, unsigned long i)
{
	uint64_t v;
	ssize_t n;

	do
		n = read(rfd, &v, sizeof(v));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(v)) {
		say("FAIL round %lu: read %zd bytes of the child's result",
		    i, n);
		exit(1);
	}
	return v;
}

static void one_round(unsigned long i)
{
	int fds[2], status;
	pid_t pid, got;

	if (pipe(fds) < 0)
		die(PROG, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], i);
	}
	close(fds[1]);
	expect_eq("child result", "value", (long)read_result(fds[0], i),
		  (long)compute(i));
	close(fds[0]);
	do
		got = waitpid(pid, &status, 0);
	while (got < 0 && errno == EINTR);
	expect_eq("waitpid", "pid", got, pid);
	expect_eq("child", "exit status", WIFEXITED(status) ?
		  WEXITSTATUS(status) : -1, (long)(i % 200));
}

int main(int argc, char **argv)
{
	unsigned long n;

	if (argc != 2)
		die(PROG, "usage: %s N", PROG);
	n = parse_ulong(PROG, "N", argv[1], 1, ULONG_MAX);
	for (unsigned long i = 1; i <= n; i++) {
		one_round(i);
		say("round %lu ok", i);
	}
	say("done");
	return 0;
}
