/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wrapped_calls [ROUNDS [CALL...]]: nanoseconds per call of the calls libckpt wraps
 * or that run beside its wrappers (docs/performance.md, "The cost of
 * running under ckpt"), one line each, "NAME NS", each the best of ROUNDS
 * rounds (5) of a fixed number of calls; all calls, or those named. Run it plain and under
 * ckpt_launch: bench/bench.py --only wrappers prints the ratios.
 * Any failure exits 1 with the call and the reason.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *const true_argv[] = { "/bin/true", NULL };

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void fail(const char *what)
{
	fprintf(stderr, "wrapped_calls: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void reap(pid_t pid, const char *what)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		fail(what);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		errno = ECHILD;
		fail(what);
	}
}

static void fork_wait(void)
{
	pid_t pid = fork();

	if (pid < 0)
		fail("fork");
	if (pid == 0)
		_exit(0);
	reap(pid, "fork: waitpid");
}

static void spawn_true(void)
{
	pid_t pid;
	int r = posix_spawn(&pid, true_argv[0], NULL, NULL,
			    (char **)true_argv, environ);

	if (r) {
		errno = r;
		fail("posix_spawn /bin/true");
	}
	reap(pid, "posix_spawn: waitpid");
}

static void fork_exec_true(void)
{
	pid_t pid = fork();

	if (pid < 0)
		fail("fork for exec");
	if (pid == 0) {
		execv(true_argv[0], (char **)true_argv);
		_exit(127);
	}
	reap(pid, "exec /bin/true: waitpid");
}

/* The pipe round trip: a child echoes each byte back. */
static int to_child[2], from_child[2];
static pid_t echo_pid;

static void start_echo(void)
{
	char c;

	if (pipe(to_child) || pipe(from_child))
		fail("pipe");
	echo_pid = fork();
	if (echo_pid < 0)
		fail("fork for the pipe echo");
	if (echo_pid) {
		close(to_child[0]);
		close(from_child[1]);
		return;
	}
	close(to_child[1]);
	close(from_child[0]);
	while (read(to_child[0], &c, 1) == 1)
		if (write(from_child[1], &c, 1) != 1)
			_exit(1);
	_exit(0);
}

static void stop_echo(void)
{
	close(to_child[1]);
	reap(echo_pid, "pipe echo: waitpid");
	close(from_child[0]);
}

static void pipe_round_trip(void)
{
	char c = 'x';

	if (write(to_child[1], &c, 1) != 1 || read(from_child[0], &c, 1) != 1)
		fail("pipe round trip");
}

static void call_getpid(void)
{
	if (getpid() <= 0)
		fail("getpid");
}

static void call_clock_gettime(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		fail("clock_gettime");
}

static void *thread_body(void *arg)
{
	return arg;
}

static void thread_create_join(void)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, thread_body, NULL);

	if (r) {
		errno = r;
		fail("pthread_create");
	}
	pthread_join(t, NULL);
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void call_sigaction(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	if (sigaction(SIGUSR1, &sa, NULL))
		fail("sigaction");
}

/* Block, then unblock, SIGUSR1: two pthread_sigmask calls. */
static void call_sigmask(void)
{
	sigset_t one;

	sigemptyset(&one);
	sigaddset(&one, SIGUSR1);
	if (pthread_sigmask(SIG_BLOCK, &one, NULL) ||
	    pthread_sigmask(SIG_UNBLOCK, &one, NULL))
		fail("pthread_sigmask");
}

struct call {
	const char *name;
	void (*fn)(void);
	long per_round;
};

static const struct call calls[] = {
	{ "fork", fork_wait, 200 },
	{ "posix_spawn", spawn_true, 100 },
	{ "exec", fork_exec_true, 100 },
	{ "pipe", pipe_round_trip, 5000 },
	{ "getpid", call_getpid, 200000 },
	{ "clock_gettime", call_clock_gettime, 1000000 },
	{ "pthread_create", thread_create_join, 2000 },
	{ "sigaction", call_sigaction, 100000 },
	{ "sigmask", call_sigmask, 100000 },
};

static double best_ns(const struct call *c, int rounds)
{
	double best = 1e18;

	for (int r = 0; r < rounds; r++) {
		double t0 = now_ns(), t;

		for (long i = 0; i < c->per_round; i++)
			c->fn();
		t = (now_ns() - t0) / c->per_round;
		if (t < best)
			best = t;
	}
	return best;
}

static int wanted(const char *name, int argc, char **argv)
{
	if (argc <= 2)
		return 1;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;

	if (rounds <= 0) {
		fprintf(stderr, "usage: wrapped_calls [ROUNDS [CALL...]]\n");
		return 2;
	}
	/* libckpt runs a thread of its own, and glibc takes faster paths in
	 * a process that never had a second thread: one idle thread makes
	 * the plain run a fair floor (bench/lock_cost.c does the same) */
	thread_create_join();
	start_echo();
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		if (!wanted(calls[i].name, argc, argv))
			continue;
		printf("%s %.1f\n", calls[i].name, best_ns(&calls[i], rounds));
		fflush(stdout);
	}
	stop_echo();
	return 0;
}
