// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * signal_inspect TICKS: a known signal state for ckpt_inspect
 * (tests/test_inspect.py), checked again by the program itself at the end:
 *   SIGUSR1  handler on_usr1, SA_SIGINFO|SA_RESTART, mask SIGTERM
 *   SIGPIPE  ignored
 *   every thread blocks SIGWINCH, which is pending for the process;
 *   thread "usr2-blocker" blocks SIGUSR2 too, sent to it (pending there),
 *   and SIGRTMAX (ckpt's signal unless taken: blocked in the program's
 *   view only), thread "int-blocker" blocks SIGINT too.
 * Prints "tid NAME TID" for both threads, "ready", then "tick K" every
 * 100 ms, TICKS times; then each thread checks its mask and what is
 * pending, takes its pending signals, main checks the dispositions and
 * that on_usr1 runs: "result masks 1 pending 1 actions 1 handler 1".
 */
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include "app_util.h"

#define PROG "signal_inspect"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int started, checking;
static volatile sig_atomic_t usr1_runs;

struct blocker {
	const char *name;
	int sig;			/* blocked in this thread */
	int rtmax;			/* and SIGRTMAX */
	int expect_sig;			/* pending for it alone, or 0 */
	pid_t tid;
	pthread_t thread;
	int masks_ok, pending_ok;
};

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	usr1_runs++;
}

static sigset_t set_of(int a, int b)
{
	sigset_t s;

	sigemptyset(&s);
	if (a)
		sigaddset(&s, a);
	if (b)
		sigaddset(&s, b);
	return s;
}

/* Whether the signals 1..64 in a and b are the same (glibc's sigset_t
 * has room for more). */
static int same_set(const sigset_t *a, const sigset_t *b)
{
	for (int sig = 1; sig <= 64; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (sigismember(a, sig) != sigismember(b, sig))
			return 0;
	}
	return 1;
}

static void wait_until(int *flag)
{
	pthread_mutex_lock(&lock);
	while (!*flag)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
}

/* Its mask and pending signals are what the start made them; then the
 * thread's own pending signal is taken. */
static void check_blocker(struct blocker *b)
{
	sigset_t mask, pending, want_mask = set_of(b->sig, SIGWINCH);
	sigset_t want_pending = set_of(b->expect_sig, SIGWINCH);
	struct timespec zero = { 0, 0 };
	sigset_t own = set_of(b->expect_sig, 0);

	if (b->rtmax)
		sigaddset(&want_mask, SIGRTMAX);
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	sigpending(&pending);
	b->masks_ok = same_set(&mask, &want_mask);
	b->pending_ok = same_set(&pending, &want_pending) &&
			(!b->expect_sig ||
			 sigtimedwait(&own, NULL, &zero) == b->expect_sig);
}

static void *blocker_main(void *arg)
{
	struct blocker *b = arg;
	sigset_t block = set_of(b->sig, b->rtmax ? SIGRTMAX : 0);

	pthread_setname_np(pthread_self(), b->name);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	b->tid = syscall(SYS_gettid);
	pthread_mutex_lock(&lock);
	started++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
	wait_until(&checking);
	check_blocker(b);
	return NULL;
}

static void install_actions(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaddset(&sa.sa_mask, SIGTERM);
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		die(PROG, "sigaction SIGUSR1: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);
}

/* The dispositions as installed, and on_usr1 runs. */
static int actions_ok(void)
{
	struct sigaction usr1, sigpipe;

	sigaction(SIGUSR1, NULL, &usr1);
	sigaction(SIGPIPE, NULL, &sigpipe);
	return usr1.sa_sigaction == on_usr1 &&
	       (usr1.sa_flags & (SA_SIGINFO | SA_RESTART)) ==
	       (SA_SIGINFO | SA_RESTART) &&
	       sigismember(&usr1.sa_mask, SIGTERM) &&
	       sigpipe.sa_handler == SIG_IGN;
}

int main(int argc, char **argv)
{
	struct blocker b[2] = {
		{ .name = "usr2-blocker", .sig = SIGUSR2, .rtmax = 1,
		  .expect_sig = SIGUSR2 },
		{ .name = "int-blocker", .sig = SIGINT },
	};
	sigset_t winch = set_of(SIGWINCH, 0);
	struct timespec zero = { 0, 0 };
	unsigned long ticks;
	int process_ok, actions;

	if (argc != 2)
		die(PROG, "usage: signal_inspect TICKS");
	ticks = parse_ulong(PROG, "TICKS", argv[1], 1, 100000);
	install_actions();
	pthread_sigmask(SIG_BLOCK, &winch, NULL);	/* for every thread */
	for (int i = 0; i < 2; i++)
		if (pthread_create(&b[i].thread, NULL, blocker_main, &b[i]))
			die(PROG, "pthread_create failed");
	pthread_mutex_lock(&lock);
	while (started < 2)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
	pthread_kill(b[0].thread, SIGUSR2);
	kill(getpid(), SIGWINCH);
	for (int i = 0; i < 2; i++)
		say("tid %s %d", b[i].name, (int)b[i].tid);
	say("ready");
	for (unsigned long k = 1; k <= ticks; k++) {
		say("tick %lu", k);
		sleep_ms(100);
	}
	pthread_mutex_lock(&lock);
	checking = 1;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < 2; i++)
		pthread_join(b[i].thread, NULL);
	process_ok = sigtimedwait(&winch, NULL, &zero) == SIGWINCH;
	actions = actions_ok();
	raise(SIGUSR1);
	say("result masks %d pending %d actions %d handler %d",
	    b[0].masks_ok && b[1].masks_ok,
	    b[0].pending_ok && b[1].pending_ok && process_ok, actions,
	    usr1_runs == 1);
	return 0;
}
