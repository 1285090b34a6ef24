/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sigchld_late FILE ZOMBIES: the parent forks ZOMBIES children that exit
 * at once (it does not reap them yet) and one more that polls every
 * millisecond for FILE and exits 7 when it appears. The parent waits for
 * that child the classic way: SIGCHLD blocked, check with
 * waitpid(WNOHANG), sigsuspend until a SIGCHLD comes. Prints "waiting"
 * once, then "reaped 7 zombies Z" (Z: how many of the others it
 * reaped). After a restart with FILE created in between, the late
 * child ends while the parent is still being restored: its SIGCHLD must
 * not be lost with the ones the recreated zombies cause.
 */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "sigchld_late"

static void on_sigchld(int sig)
{
	(void)sig;
}

static void __attribute__((noreturn)) late_child(const char *file)
{
	struct stat st;

	while (stat(file, &st) < 0)
		sleep_ms(1);
	_exit(7);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_sigchld };
	unsigned long nzombies;
	sigset_t chld, old;
	int status, reaped = 0;
	pid_t late;

	if (argc != 3)
		die(PROG, "usage: sigchld_late FILE ZOMBIES");
	nzombies = parse_ulong(PROG, "ZOMBIES", argv[2], 0, 200);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	for (unsigned long i = 0; i < nzombies; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die(PROG, "fork: %s", strerror(errno));
		if (pid == 0)
			_exit(0);
	}
	late = fork();
	if (late < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (late == 0)
		late_child(argv[1]);
	say("waiting");
	while (waitpid(late, &status, WNOHANG) != late)
		sigsuspend(&old);
	while (waitpid(-1, &(int){ 0 }, 0) > 0)
		reaped++;
	say("reaped %d zombies %d", WIFEXITED(status) ? WEXITSTATUS(status) :
	    -1, reaped);
	return 0;
}
