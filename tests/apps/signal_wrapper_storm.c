/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * signal_wrapper_storm STEPS: two threads call sigaction and
 * pthread_sigmask without pause while a third sends the process SIGUSR1
 * (so the program's handler often runs in the middle of those calls),
 * and the main thread, at steps STEPS/4 and STEPS/2, installs handlers
 * on SIGRTMAX and SIGRTMAX-1 (ckpt's usual checkpoint signals: libckpt
 * moves its own while the others storm). Each step (50 ms) it prints
 * "step N"; every call's result is checked as the program must see it:
 * a blocked SIGUSR2 reads blocked, an unblocked one not, the action read
 * back is the one set. The last line: "done STEPS rt HITS" once the
 * real-time handlers took the signals sent to them.
 */
#include <pthread.h>
#include <signal.h>
#include "app_util.h"

#define PROG "signal_wrapper_storm"

static volatile sig_atomic_t usr1_hits, usr2_hits, rt_hits, stop;

static void on_usr1(int sig) { (void)sig; usr1_hits++; }
static void on_usr2(int sig) { (void)sig; usr2_hits++; }
static void on_rt(int sig) { (void)sig; rt_hits++; }

static void set_action(int sig, void (*fn)(int))
{
	struct sigaction sa, back;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) || sigaction(sig, NULL, &back))
		die(PROG, "sigaction %d: %s", sig, strerror(errno));
	if (back.sa_handler != fn)
		die(PROG, "signal %d: the action read back is not the one set",
		    sig);
}

static void expect_blocked(int sig, int want)
{
	sigset_t now;

	if (pthread_sigmask(SIG_BLOCK, NULL, &now))
		die(PROG, "pthread_sigmask: query failed");
	if (sigismember(&now, sig) != want)
		die(PROG, "signal %d reads %s", sig,
		    want ? "unblocked after SIG_BLOCK" : "blocked after "
		    "SIG_UNBLOCK");
}

static void *mask_storm(void *arg)
{
	sigset_t usr2;

	(void)arg;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	while (!stop) {
		if (pthread_sigmask(SIG_BLOCK, &usr2, NULL))
			die(PROG, "pthread_sigmask SIG_BLOCK failed");
		expect_blocked(SIGUSR2, 1);
		set_action(SIGUSR2, on_usr2);
		if (pthread_sigmask(SIG_UNBLOCK, &usr2, NULL))
			die(PROG, "pthread_sigmask SIG_UNBLOCK failed");
		expect_blocked(SIGUSR2, 0);
	}
	return NULL;
}

static void *action_storm(void *arg)
{
	sigset_t none, old;

	(void)arg;
	sigemptyset(&none);
	while (!stop) {
		set_action(SIGUSR1, on_usr1);
		if (sigprocmask(SIG_SETMASK, &none, &old))
			die(PROG, "sigprocmask SIG_SETMASK failed");
	}
	return NULL;
}

static void *sender(void *arg)
{
	(void)arg;
	while (!stop) {
		kill(getpid(), SIGUSR1);
		sleep_ms(1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long steps, i;
	pthread_t t[3];

	if (argc != 2)
		die(PROG, "usage: %s STEPS", PROG);
	steps = parse_ulong(PROG, "STEPS", argv[1], 8, 100000);
	set_action(SIGUSR1, on_usr1);
	set_action(SIGUSR2, on_usr2);
	if (pthread_create(&t[0], NULL, mask_storm, NULL) ||
	    pthread_create(&t[1], NULL, action_storm, NULL) ||
	    pthread_create(&t[2], NULL, sender, NULL))
		die(PROG, "pthread_create failed");
	for (i = 1; i <= steps; i++) {
		if (i == steps / 4)
			set_action(SIGRTMAX, on_rt);
		if (i == steps / 2)
			set_action(SIGRTMAX - 1, on_rt);
		say("step %lu", i);
		sleep_ms(50);
	}
	stop = 1;
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	kill(getpid(), SIGRTMAX);
	kill(getpid(), SIGRTMAX - 1);
	for (i = 0; i < 100 && rt_hits < 2; i++)
		sleep_ms(10);
	if (!usr1_hits)
		die(PROG, "SIGUSR1 never reached its handler");
	say("done %lu rt %d", steps, (int)rt_hits);
	return 0;
}
