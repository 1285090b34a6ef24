/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exit_after_resume N LIFE_MS exit|_exit|kill: fork N short-lived
 * children, one after the other. Each spins for at most LIFE_MS, reading
 * the clock; when it sees the clock jump by more than 20 ms (it was
 * stopped: a checkpoint, or a restart) it ends at once, right after the
 * checkpoint resumed it, while its image is still being made durable:
 * by exit(I % 100), _exit(I % 100) or SIGKILL to itself. The parent
 * reaps each child, prints "child I code C" (C: the exit code, or 100 +
 * the signal number) and at the end "done N sum S", S the sum of the
 * codes, which it also checks against what it expects ("FAIL ..." and
 * exit 1 if they differ).
 */
#include <signal.h>
#include <sys/wait.h>
#include "app_util.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void end_child(unsigned long i, const char *how)
{
	if (!strcmp(how, "exit"))
		exit(i % 100);
	if (!strcmp(how, "kill"))
		raise(SIGKILL);
	_exit(i % 100);
}

static void child(unsigned long i, long life_ms, const char *how)
{
	int64_t start = now_ms(), last = start;

	for (;;) {
		int64_t t = now_ms();

		if (t - last > 20 || t - start >= life_ms)
			end_child(i, how);
		last = t;
	}
}

static int code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 100 + WTERMSIG(status) : -1;
}

int main(int argc, char **argv)
{
	unsigned long n, sum = 0, want = 0;
	long life;

	if (argc != 4)
		die(argv[0], "usage: exit_after_resume N LIFE_MS "
		    "exit|_exit|kill");
	n = strtoul(argv[1], NULL, 10);
	life = strtol(argv[2], NULL, 10);
	for (unsigned long i = 1; i <= n; i++) {
		int status, code;
		pid_t pid = fork();

		if (pid < 0)
			die(argv[0], "fork: %s", strerror(errno));
		if (pid == 0)
			child(i, life, argv[3]);
		if (waitpid(pid, &status, 0) != pid)
			die(argv[0], "waitpid %d: %s", (int)pid,
			    strerror(errno));
		code = code_of(status);
		sum += code;
		want += strcmp(argv[3], "kill") ? i % 100 : 100 + SIGKILL;
		say("child %lu code %d", i, code);
	}
	if (sum != want) {
		say("FAIL sum %lu, expected %lu", sum, want);
		return 1;
	}
	say("done %lu sum %lu", n, sum);
	return 0;
}
