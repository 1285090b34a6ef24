/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * siginfo_pid N: the parent forks a child that sends it SIGUSR1 with
 * sigqueue every 20 ms, N times, then exits 4. The parent's SA_SIGINFO
 * handlers note si_pid of each SIGUSR1 and of the SIGCHLD; it prints
 * "usr1 K" as they come and at the end "done usr1 N wrong 0 chld ok
 * status 4" when every si_pid was the pid fork() returned (after a
 * restart the sender has another real pid).
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

int main(int argc, char **argv)
{
	unsigned long n;
	int status, shown = 0;
	pid_t child;

	if (argc != 2)
		die(PROG, "usage: siginfo_pid N");
	n = parse_ulong(PROG, "N", argv[1], 1, 100000);
	sigset_t usr1;
	pid_t r;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	install(SIGUSR1, on_usr1);
	install(SIGCHLD, on_chld);
	sigprocmask(SIG_BLOCK, &usr1, NULL); /* until `expected` is set */
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
