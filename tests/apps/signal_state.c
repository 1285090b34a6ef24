/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * signal_state TICKS ALARM_S: signal state that must survive a restart.
 * At start: handlers for SIGUSR1 and SIGRTMIN+1, both blocked; SIGUSR1
 * raised (thread-directed), SIGRTMIN+1 queued with value 4242
 * (process-directed); alarm(ALARM_S) armed. It also checks that no
 * real-time signal shows a checkpointer's handler, that SIG_IGN on each
 * reads back, and that a full mask reads back full. Then "tick K" every 100 ms; the tick at which SIGALRM arrived is
 * recorded. At the end the blocked signals are unblocked and delivered:
 * "result usr1 1 rt 1 value 4242 alarm_tick K reserved_ok 1".
 */
#include <signal.h>
#include "app_util.h"

#define PROG "signal_state"

static volatile sig_atomic_t got_usr1, got_rt, rt_value, alarm_tick = -1;
static volatile sig_atomic_t tick;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == SIGUSR1)
		got_usr1++;
	else if (sig == SIGALRM)
		alarm_tick = tick;
	else {
		got_rt++;
		rt_value = si->si_value.sival_int;
	}
}

static int reserved_signal_hidden(void)
{
	struct sigaction sa, back;
	sigset_t all, old;

	memset(&sa, 0, sizeof(sa));
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
		if (sig == SIGRTMIN + 1)
			continue;
		sa.sa_handler = SIG_IGN;
		if (sigaction(sig, &sa, &back) != 0 ||
		    back.sa_handler != SIG_DFL)
			return 0;
		sa.sa_handler = SIG_DFL;
		if (sigaction(sig, &sa, &back) != 0 ||
		    back.sa_handler != SIG_IGN)
			return 0;
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	sigprocmask(SIG_SETMASK, &old, &all);
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		if (!sigismember(&all, sig) ||
		    sigismember(&old, sig) != (sig == SIGRTMIN + 1))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	unsigned long ticks, alarm_s;
	struct sigaction sa;
	union sigval v;
	sigset_t block;
	int reserved_ok;

	if (argc != 3)
		die(PROG, "usage: signal_state TICKS ALARM_S");
	ticks = parse_ulong(PROG, "TICKS", argv[1], 1, 100000);
	alarm_s = parse_ulong(PROG, "ALARM_S", argv[2], 1, 1000);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGRTMIN + 1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGRTMIN + 1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	raise(SIGUSR1);
	v.sival_int = 4242;
	sigqueue(getpid(), SIGRTMIN + 1, v);
	reserved_ok = reserved_signal_hidden();
	alarm(alarm_s);
	for (tick = 1; tick <= (long)ticks; tick++) {
		say("tick %ld", (long)tick);
		sleep_ms(100);
	}
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	say("result usr1 %d rt %d value %d alarm_tick %d reserved_ok %d",
	    (int)got_usr1, (int)got_rt, (int)rt_value, (int)alarm_tick,
	    reserved_ok);
	return 0;
}
