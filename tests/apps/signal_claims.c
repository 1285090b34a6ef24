/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * signal_claims ITER [EVERY]: a program that wants the real-time signals a
 * checkpointer would like to keep for itself, as the JDK (SIGRTMAX-2)
 * and other runtimes do.
 *
 * At start a worker thread blocks every signal and keeps checking that
 * its mask reads back as it set it, and so does one created while the
 * main thread blocked every signal; a second one blocks every signal but
 * SIGUSR1 and is inside its SIGUSR1 handler (a 300 ms sleep) while the
 * first claims are made, so ckpt moves while it runs a handler; a third
 * does the same with SIGUSR2, whose handler leaves with siglongjmp to a
 * sigsetjmp made before the moves. The main thread resets every signal
 * to SIG_DFL (as git's run-command does before an exec), sets SIG_IGN
 * and SIG_DFL on every real-time signal and reads them back, then
 * installs handlers on the top six (SIGRTMAX-2, SIGRTMAX, SIGRTMAX-1,
 * ...), one of which any checkpointer choosing from the top holds.
 * Every EVERY (20) iterations it claims one more, downwards, while
 * free ones are left. Each iteration sends
 * every claimed signal to the process with sigqueue (checking its value)
 * and raise, blocks one, raises it, finds it in sigpending, unblocks it,
 * and takes another with sigwaitinfo; each must reach the program at
 * once. "iter K" per iteration. At the end a forked child takes every
 * real-time signal but SIGRTMIN and the parent sends it each one (the
 * parent's checkpoint signal among them: another process's own signal):
 * "child got N". Then one "counts" line with every signal's deliveries,
 * "worker ran" and "OK".
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "signal_claims"
#define MAX_CLAIMS 28

static int claimed[MAX_CLAIMS], nclaimed;
static volatile sig_atomic_t delivered[65], bad_value;
static volatile int worker_loops, worker_failed;
static volatile int in_usr1, usr1_done, in_usr2, usr2_done;
static sigjmp_buf before_moves;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (si->si_code == SI_QUEUE && si->si_value.sival_int != sig * 1000)
		bad_value = sig;
	delivered[sig]++;
}

static int is_settable(int sig)
{
	return sig != SIGKILL && sig != SIGSTOP && sig != 32 && sig != 33;
}

/* What a full mask reads back as: glibc never blocks 32 and 33, the
 * kernel never SIGKILL and SIGSTOP. */
static int mask_is_full(const sigset_t *set)
{
	for (int sig = 1; sig <= 64; sig++)
		if (is_settable(sig) && !sigismember(set, sig))
			return 0;
	return 1;
}

/* arg NULL: blocks every signal itself; else was created so */
static void *worker(void *arg)
{
	sigset_t all, now;

	sigfillset(&all);
	if (!arg)
		pthread_sigmask(SIG_SETMASK, &all, NULL);
	for (;;) {
		pthread_sigmask(SIG_BLOCK, NULL, &now);
		if (!mask_is_full(&now))
			worker_failed = 1;
		__atomic_add_fetch(&worker_loops, 1, __ATOMIC_RELAXED);
		sleep_ms(2);
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	in_usr1 = 1;
	sleep_ms(300);
	usr1_done = 1;
}

/* Blocks every signal but SIGUSR1, in whose handler it sleeps. */
static void *handler_worker(void *arg)
{
	sigset_t all, now;

	(void)arg;
	sigfillset(&all);
	sigdelset(&all, SIGUSR1);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	for (;;) {
		pthread_sigmask(SIG_BLOCK, NULL, &now);
		if (!sigismember(&now, SIGRTMAX) || !sigismember(&now, SIGRTMIN)
		    || sigismember(&now, SIGUSR1))
			worker_failed = 2;
		sleep_ms(2);
	}
	return NULL;
}

static void on_usr2(int sig)
{
	(void)sig;
	in_usr2 = 1;
	sleep_ms(300);
	siglongjmp(before_moves, 1);
}

/* Blocks every signal but SIGUSR2, whose handler jumps back here; then
 * only sleeps (a mask call of its own would set its mask right again). */
static void *jumping_worker(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	sigdelset(&all, SIGUSR2);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	if (sigsetjmp(before_moves, 1))
		usr2_done = 1;
	for (;;)
		sleep_ms(50);
	return NULL;
}

static void reset_every_signal(void)
{
	struct sigaction sa, back;

	memset(&sa, 0, sizeof(sa));
	for (int sig = 1; sig <= 64; sig++) {
		sa.sa_handler = SIG_DFL;
		if (!is_settable(sig))
			continue;
		expect_eq("reset", "sigaction SIG_DFL", sigaction(sig, &sa, NULL),
			  0);
	}
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++) {
		sa.sa_handler = SIG_IGN;
		expect_eq("ignore", "sigaction SIG_IGN", sigaction(sig, &sa,
								   &back), 0);
		expect_eq("ignore", "was SIG_DFL", back.sa_handler == SIG_DFL,
			  1);
		sa.sa_handler = SIG_DFL;
		sigaction(sig, &sa, &back);
		expect_eq("ignore", "read back SIG_IGN",
			  back.sa_handler == SIG_IGN, 1);
	}
}

static void claim(int sig)
{
	struct sigaction sa, old, back;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	expect_eq("claim", "sigaction", sigaction(sig, &sa, &old), 0);
	expect_eq("claim", "old action SIG_DFL", old.sa_handler == SIG_DFL, 1);
	sigaction(sig, NULL, &back);
	expect_eq("claim", "handler read back",
		  back.sa_sigaction == on_signal, 1);
	expect_eq("claim", "SA_SIGINFO read back",
		  !!(back.sa_flags & SA_SIGINFO), 1);
	expect_eq("claim", "full sa_mask read back",
		  mask_is_full(&back.sa_mask), 1);
	claimed[nclaimed++] = sig;
}

static void send_each(void)
{
	for (int i = 0; i < nclaimed; i++) {
		int sig = claimed[i], before = delivered[sig];
		union sigval v = { .sival_int = sig * 1000 };

		sigqueue(getpid(), sig, v);
		expect_eq("sigqueue", "delivered", delivered[sig], before + 1);
		raise(sig);
		expect_eq("raise", "delivered", delivered[sig], before + 2);
	}
}

static void block_pending_unblock(int sig)
{
	sigset_t one, pending;
	int before = delivered[sig];

	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_BLOCK, &one, NULL);
	raise(sig);
	expect_eq("blocked", "not delivered", delivered[sig], before);
	sigpending(&pending);
	expect_eq("blocked", "pending", sigismember(&pending, sig), 1);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	expect_eq("unblocked", "delivered", delivered[sig], before + 1);
}

static int wait_for(int sig)
{
	sigset_t one;
	siginfo_t si;

	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_BLOCK, &one, NULL);
	raise(sig);
	expect_eq("sigwaitinfo", "signal", sigwaitinfo(&one, &si), sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	return 1;
}

static volatile sig_atomic_t child_got;

static void on_child_signal(int sig)
{
	(void)sig;
	child_got++;
}

static void child_takes_every_signal(int ready)
{
	struct sigaction sa;
	int want = SIGRTMAX - SIGRTMIN;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_child_signal;
	for (int sig = SIGRTMIN + 1; sig <= SIGRTMAX; sig++)
		if (sigaction(sig, &sa, NULL) < 0)
			_exit(100);
	if (write(ready, "r", 1) != 1)
		_exit(101);
	for (int i = 0; i < 5000 && child_got < want; i++)
		sleep_ms(1);
	_exit(child_got);
}

/* Returns how many signals the child got. */
static int signal_a_child(void)
{
	int pipefd[2], status;
	char c;
	pid_t pid;

	if (pipe(pipefd) < 0)
		die(PROG, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (pid == 0)
		child_takes_every_signal(pipefd[1]);
	if (read(pipefd[0], &c, 1) != 1)
		die(PROG, "the child did not start");
	for (int sig = SIGRTMIN + 1; sig <= SIGRTMAX; sig++)
		expect_eq("kill child", "kill", kill(pid, sig), 0);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die(PROG, "waitpid: %s", strerror(errno));
	close(pipefd[0]);
	close(pipefd[1]);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv)
{
	static const int top[] = { 2, 0, 1, 3, 4, 5 };
	unsigned long iter, every = 20;
	pthread_t th, th2, th3, th4;
	sigset_t all, old;
	int waited = 0, next = SIGRTMAX - 6;

	if (argc != 2 && argc != 3)
		die(PROG, "usage: signal_claims ITER [EVERY]");
	iter = parse_ulong(PROG, "ITER", argv[1], 1, 100000);
	if (argc == 3)
		every = parse_ulong(PROG, "EVERY", argv[2], 1, 100000);
	pthread_create(&th, NULL, worker, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_create(&th4, NULL, worker, &all);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	reset_every_signal();
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	pthread_create(&th2, NULL, handler_worker, NULL);
	pthread_create(&th3, NULL, jumping_worker, NULL);
	sleep_ms(20);
	pthread_kill(th2, SIGUSR1);
	pthread_kill(th3, SIGUSR2);
	for (int i = 0; i < 5000 && !(in_usr1 && in_usr2); i++)
		sleep_ms(1);
	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
		claim(SIGRTMAX - top[i]);
	expect_eq("handler workers", "still in their handlers",
		  usr1_done || usr2_done, 0);
	for (int i = 0; i < 5000 && !(usr1_done && usr2_done); i++)
		sleep_ms(1);
	for (unsigned long k = 1; k <= iter; k++) {
		if (k % every == 0 && nclaimed < MAX_CLAIMS && next > SIGRTMIN)
			claim(next--);
		send_each();
		block_pending_unblock(claimed[k % nclaimed]);
		waited += wait_for(claimed[(k + 1) % nclaimed]);
		expect_eq("handler", "bad sigqueue value", bad_value, 0);
		expect_eq("worker", "mask read back full", worker_failed, 0);
		say("iter %lu", k);
		sleep_ms(20);
	}
	say("child got %d", signal_a_child());
	printf("counts");
	for (int i = 0; i < nclaimed; i++)
		printf(" %d:%d", claimed[i], (int)delivered[claimed[i]]);
	say(" waited %d", waited);
	say("worker %s", worker_loops > 0 ? "ran" : "never ran");
	say("OK");
	return 0;
}
