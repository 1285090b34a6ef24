/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pgroups ITER DELAY_MS: process groups made by the program survive a
 * restart. The parent leads its own group; child A leads another; child
 * C (A's sibling) joins A's group. Every process checks its group on each
 * step ("<name> <i>"); the parent also checks getpgid() of both children.
 * At the end the parent signals A's whole group with kill(-A, SIGTERM) and
 * reaps A and C (both exit 9). Last line "OK groups".
 */
#include <signal.h>
#include <sys/wait.h>
#include "app_util.h"

static unsigned long iters, delay_ms;
static volatile sig_atomic_t term;

static void on_term(int sig)
{
	(void)sig;
	term = 1;
}

static void member(const char *who, pid_t group)
{
	unsigned long i = 0;

	while (!term) {
		expect_eq(who, "getpgrp", getpgrp(), group);
		if (++i % 20 == 0)
			say("%s %lu", who, i);
		sleep_ms(delay_ms);
	}
	exit(9);
}

static void wait_for_group(pid_t pid, pid_t group)
{
	for (int i = 0; i < 5000 && getpgid(pid) != group; i++)
		sleep_ms(1);
	expect_eq("parent", "getpgid while starting", getpgid(pid), group);
}

int main(int argc, char **argv)
{
	pid_t a, c;
	int status;

	if (argc != 3)
		die("pgroups", "usage: pgroups ITER DELAY_MS");
	iters = parse_ulong("pgroups", "ITER", argv[1], 1, 1000000);
	delay_ms = parse_ulong("pgroups", "DELAY_MS", argv[2], 0, 10000);
	signal(SIGTERM, on_term);
	if (setpgid(0, 0) < 0)
		die("pgroups", "setpgid: %s", strerror(errno));
	fflush(stdout);
	a = fork();
	if (a == 0) {
		setpgid(0, 0);
		member("A", getpid());
	}
	wait_for_group(a, a);
	fflush(stdout);
	c = fork();
	if (c == 0) {
		if (setpgid(0, a) < 0)
			die("pgroups", "join: %s", strerror(errno));
		member("C", a);
	}
	wait_for_group(c, a);
	say("start parent %d a %d c %d", (int)getpid(), (int)a, (int)c);
	for (unsigned long i = 1; i <= iters; i++) {
		expect_eq("parent", "getpgrp", getpgrp(), getpid());
		expect_eq("parent", "getpgid(A)", getpgid(a), a);
		expect_eq("parent", "getpgid(C)", getpgid(c), a);
		say("parent %lu", i);
		sleep_ms(delay_ms);
	}
	expect_eq("parent", "kill(-A)", kill(-a, SIGTERM), 0);
	expect_eq("parent", "waitpid(A)", waitpid(a, &status, 0), a);
	expect_eq("parent", "A's status", status, 9 << 8);
	expect_eq("parent", "waitpid(C)", waitpid(c, &status, 0), c);
	expect_eq("parent", "C's status", status, 9 << 8);
	say("OK groups");
	return 0;
}
