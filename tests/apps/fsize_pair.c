/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fsize_pair TICKS: a parent and a forked child each count to TICKS
 * ("parent N" / "child N", every 50 ms). On SIGUSR1 the parent limits the
 * size of the files it may write (RLIMIT_FSIZE, 1 MiB) and fills 8 MiB of
 * heap, so its next image cannot be written while the child's can: the
 * failed checkpoint must leave both previous images in place. Prints
 * "pid P" first and "limited" once the limit is set.
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "fsize_pair"

static volatile sig_atomic_t limit_asked;

static void on_usr1(int sig)
{
	(void)sig;
	limit_asked = 1;
}

static void limit_and_grow(void)
{
	struct rlimit rl = { 1 << 20, 1 << 20 };
	size_t n = 8u << 20;
	unsigned char *p = malloc(n);

	if (!p || setrlimit(RLIMIT_FSIZE, &rl) < 0)
		die(PROG, "limit: %s", strerror(errno));
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 2654435761u >> 13);
	say("limited");
}

static void count(const char *who, unsigned long ticks, int parent)
{
	for (unsigned long k = 1; k <= ticks; k++) {
		if (parent && limit_asked == 1) {
			limit_asked = 2;
			limit_and_grow();
		}
		say("%s %lu", who, k);
		sleep_ms(50);
	}
}

int main(int argc, char **argv)
{
	unsigned long ticks;
	int status;
	pid_t child;

	if (argc != 2)
		die(PROG, "usage: fsize_pair TICKS");
	ticks = parse_ulong(PROG, "TICKS", argv[1], 1, 1000000);
	signal(SIGUSR1, on_usr1);
	say("pid %d", (int)getpid());
	child = fork();
	if (child < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (child == 0) {
		count("child", ticks, 0);
		return 0;
	}
	count("parent", ticks, 1);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die(PROG, "child: status %#x", status);
	say("done");
	return 0;
}
