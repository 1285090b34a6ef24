/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * siginfo_pid N handler|sigwait: the parent forks a child that sends it
 * SIGUSR1 with sigqueue every 20 ms, N times, then exits 4. The parent
 * notes si_pid of each SIGUSR1 and of the SIGCHLD, either in SA_SIGINFO
 * handlers or, with every signal blocked, from sigtimedwait on a full set
 * (sigfillset, 50 ms timeout); it prints "usr1 K" as they come and at the
 * end "done usr1 N wrong 0 chld ok status 4" when every si_pid was the
 * pid fork() returned (after a restart the sender has another real pid).
 */
#include <signal.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "siginfo_pid"

static volatile sig_atomic_t usr1_count, usr1_wrong, chld_from;
static volatile pid_t expected;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	usr1_count++;
	if (si->si_pid != expected || si->si_code != SI_QUEUE)
		usr1_wrong++;
}

static void on_chld(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	chld_from = si->si_pid;
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa = { .sa_sigaction = fn,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	struct sigaction back;

	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) < 0 || sigaction(sig, NULL, &back) < 0)
		die(PROG, "sigaction %d: %s", sig, strerror(errno));
	if (!(back.sa_flags & SA_SIGINFO) || back.sa_sigaction != fn)
		die(PROG, "sigaction %d does not show the handler set", sig);
}

/* Every signal blocked; take them with sigtimedwait until SIGCHLD. */
static void wait_signals(pid_t child)
{
	struct timespec slice = { 0, 50 * 1000 * 1000 };
	sigset_t all;
	siginfo_t si;
	int shown = 0;

	sigfillset(&all);
	for (;;) {
		int sig = sigtimedwait(&all, &si, &slice);

		if (sig == SIGUSR1)
			on_usr1(sig, &si, NULL);
		else if (sig == SIGCHLD && si.si_pid == child)
			break;
		else if (sig == SIGCHLD)
			chld_from = si.si_pid;
		else if (sig > 0)
			die(PROG, "sigtimedwait returned signal %d", sig);
		else if (errno != EAGAIN)
			die(PROG, "sigtimedwait: %s", strerror(errno));
		if (usr1_count > shown)
			say("usr1 %d", shown = usr1_count);
	}
	chld_from = si.si_pid;
}

int main(int argc, char **argv)
{
	unsigned long n;
	int status, shown = 0;
	pid_t child;

	if (argc != 3 || (strcmp(argv[2], "handler") &&
			  strcmp(argv[2], "sigwait")))
		die(PROG, "usage: siginfo_pid N handler|sigwait");
	n = parse_ulong(PROG, "N", argv[1], 1, 100000);
	int by_handler = !strcmp(argv[2], "handler");
	sigset_t usr1, all;
	pid_t r;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigfillset(&all);
	if (by_handler) {
		install(SIGUSR1, on_usr1);
		install(SIGCHLD, on_chld);
	}
	sigprocmask(SIG_BLOCK, by_handler ? &usr1 : &all, NULL);
	child = fork();
	if (child < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (child == 0) {
		sigprocmask(SIG_UNBLOCK, &usr1, NULL);
		for (unsigned long i = 0; i < n; i++) {
			sigqueue(getppid(), SIGUSR1,
				 (union sigval){ .sival_int = (int)i });
			sleep_ms(20);
		}
		_exit(4);
	}
	expected = child;
	if (!by_handler)
		wait_signals(child);
	sigprocmask(SIG_UNBLOCK, &usr1, NULL);
	while ((r = waitpid(child, &status, WNOHANG)) != child) {
		if (r < 0 && errno != EINTR)
			die(PROG, "waitpid: %s", strerror(errno));
		if (usr1_count > shown)
			say("usr1 %d", shown = usr1_count);
		sleep_ms(10);
	}
	say("done usr1 %d wrong %d chld %s status %d", (int)usr1_count,
	    (int)usr1_wrong, chld_from == child ? "ok" : "wrong",
	    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}
