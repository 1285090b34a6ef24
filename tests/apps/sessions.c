/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sessions ITER DELAY_MS: a session made by the program survives a
 * restart. Child S calls setsid() and forks G, which stays in S's session
 * and group. Each checks on every step that getsid() and getpgrp() are
 * what they were ("<name> <i>"); the parent checks getsid() of S and of
 * itself (the session it was started in). At the end the parent signals
 * S's group with kill(-S, SIGTERM); S reaps G (exit 9) and exits 9. Last
 * line "OK sessions".
 */
#include <signal.h>
#include <sys/wait.h>
#include "app_util.h"

static unsigned long delay_ms;
static volatile sig_atomic_t term;

static void on_term(int sig)
{
	(void)sig;
	term = 1;
}

static void run(const char *who, pid_t sid)
{
	unsigned long i = 0;

	while (!term) {
		expect_eq(who, "getsid", getsid(0), sid);
		expect_eq(who, "getpgrp", getpgrp(), sid);
		if (++i % 20 == 0)
			say("%s %lu", who, i);
		sleep_ms(delay_ms);
	}
}

static void session_leader(void)
{
	pid_t g;
	int status;

	if (setsid() < 0)
		die("sessions", "setsid: %s", strerror(errno));
	fflush(stdout);
	g = fork();
	if (g == 0) {
		run("G", getppid());
		exit(9);
	}
	run("S", getpid());
	expect_eq("S", "waitpid(G)", waitpid(g, &status, 0), g);
	expect_eq("S", "G's status", status, 9 << 8);
	exit(9);
}

int main(int argc, char **argv)
{
	unsigned long iters;
	pid_t s, sid = getsid(0);
	int status;

	if (argc != 3)
		die("sessions", "usage: sessions ITER DELAY_MS");
	iters = parse_ulong("sessions", "ITER", argv[1], 1, 1000000);
	delay_ms = parse_ulong("sessions", "DELAY_MS", argv[2], 0, 10000);
	signal(SIGTERM, on_term);
	fflush(stdout);
	s = fork();
	if (s == 0)
		session_leader();
	for (int i = 0; i < 5000 && getsid(s) != s; i++)
		sleep_ms(1);
	say("start parent %d s %d", (int)getpid(), (int)s);
	for (unsigned long i = 1; i <= iters; i++) {
		expect_eq("parent", "getsid(0)", getsid(0), sid);
		expect_eq("parent", "getsid(S)", getsid(s), s);
		say("parent %lu", i);
		sleep_ms(delay_ms);
	}
	expect_eq("parent", "kill(-S)", kill(-s, SIGTERM), 0);
	expect_eq("parent", "waitpid(S)", waitpid(s, &status, 0), s);
	expect_eq("parent", "S's status", status, 9 << 8);
	say("OK sessions");
	return 0;
}
