// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * template_restores ROUNDS COUNT (tests/test_snapshot_templates.py): a
 * tool linked with libckpt-control restoring template snapshots of a
 * stdin_echo (tests/apps/stdin_echo.c) that has answered COUNT lines,
 * as fast as the library allows. Per round: a snapshot, at once its
 * restore (ckpt_control_restore_template, then the RESTORE order to the
 * template) with pipes of ours as the restored process's stdin and
 * stdout, a line to it, whose answer must be "echo N r" with N the next
 * number after the snapshot's; then the snapshot is dropped and the
 * restored process, once it has joined the coordinator, is the next
 * round's. Prints "round I ok" per round; on a failure one line saying
 * which round and why, and exit 1. At the end the computation is killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/control.h"
#include "../../control/template_orders.h"

#define WAIT_MS		10000

static int round_no;

static void fail(const char *fmt, const char *what)
{
	printf("round %d: ", round_no);
	printf(fmt, what);
	printf("\n");
	exit(1);
}

static void fail_control(const char *call, const struct ckpt_control_error *e)
{
	printf("round %d: %s: %s\n", round_no, call, e->message);
	exit(1);
}

/* A restore kills only processes that joined the coordinator. */
static void wait_rejoined(struct ckpt_control *c)
{
	struct ckpt_control_error err;
	int r = template_wait_restored_joined(c, WAIT_MS, &err);

	if (r == -ETIMEDOUT)
		fail("%s", "the restored process did not join the "
		     "coordinator within 10 s");
	if (r < 0)
		fail_control("list", &err);
}

/* The restored process's stdin (ours to write) and stdout (to read). */
struct app_pipes {
	int to_app, from_app;
	int reports;	/* the template's reports on the restored process */
};

/* Our ends: closing them lets nothing of a killed process linger. */
static void close_pipes(struct app_pipes *p)
{
	int *ends[3] = { &p->to_app, &p->from_app, &p->reports };

	for (int i = 0; i < 3; i++) {
		if (*ends[i] >= 0)
			close(*ends[i]);
		*ends[i] = -1;
	}
}

/* How the restored process ended, from its template's report. */
static void fail_ended(int reports)
{
	struct ckpt_template_report rep;
	char how[128];
	int r = template_read_report(reports, WAIT_MS, &rep);

	if (r == 0 && rep.event == CKPT_TEMPLATE_EXITED)
		snprintf(how, sizeof(how), "the restored process closed its "
			 "stdout and ended with wait status 0x%x", rep.value);
	else
		snprintf(how, sizeof(how), "the restored process closed its "
			 "stdout (no end report: %s)", template_strerror(r));
	fail("%s", how);
}

/* One line from the restored process within WAIT_MS, or a failure. */
static void read_line(int fd, int reports, char *line, size_t len)
{
	struct pollfd pf = { fd, POLLIN, 0 };
	size_t got = 0;

	while (got < len - 1) {
		ssize_t n;

		if (poll(&pf, 1, WAIT_MS) <= 0)
			fail("%s", "the restored process did not answer "
			     "within 10 s");
		n = read(fd, line + got, 1);
		if (n <= 0)
			fail_ended(reports);
		if (line[got] == '\n')
			break;
		got++;
	}
	line[got] = 0;
}

static void restore(struct ckpt_control *c, uint64_t id, struct app_pipes *p)
{
	struct ckpt_control_reply rep;
	struct ckpt_control_error err;
	struct ckpt_template_report started;
	struct template_ref t;
	int in[2], out[2], rfd, null, r;

	if (ckpt_control_restore_template(c, id, &rep, &err) < 0)
		fail_control("restore", &err);
	if (template_parse(rep.text, &t) < 0)
		fail("the snapshot is no template: %s", rep.text);
	ckpt_control_reply_free(&rep);
	close_pipes(p);		/* the process they led to is killed */
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0 || pipe2(in, O_CLOEXEC) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0)
		fail("pipes for the restored process: %s", strerror(errno));
	r = template_restore_on(&t, (int[3]){ in[0], out[1], null }, WAIT_MS,
				&rfd, &started);
	close(in[0]);
	close(out[1]);
	close(null);
	p->to_app = in[1];
	p->from_app = out[0];
	if (r < 0)
		fail("the template's order to restore: %s",
		     template_strerror(r));
	p->reports = rfd;
}

int main(int argc, char **argv)
{
	int rounds = argc == 3 ? atoi(argv[1]) : 0;
	long count = argc == 3 ? atol(argv[2]) : -1;
	struct app_pipes p = { -1, -1, -1 };
	struct ckpt_control_error err;
	struct ckpt_control c;

	if (rounds <= 0 || count < 0) {
		fprintf(stderr, "usage: template_restores ROUNDS COUNT\n");
		return 2;
	}
	if (ckpt_control_open(&c, NULL, &err) < 0)
		fail_control("connecting", &err);
	for (round_no = 1; round_no <= rounds; round_no++) {
		char line[256], want[64];
		uint64_t id;

		if (ckpt_control_snapshot(&c, &id, NULL, &err) < 0)
			fail_control("snapshot", &err);
		restore(&c, id, &p);
		if (write(p.to_app, "r\n", 2) != 2)
			fail("writing to the restored process: %s",
			     strerror(errno));
		read_line(p.from_app, p.reports, line, sizeof(line));
		snprintf(want, sizeof(want), "echo %ld r", ++count);
		if (strcmp(line, want))
			fail("the restored process answered '%s'", line);
		if (ckpt_control_drop(&c, id, NULL, &err) < 0)
			fail_control("drop", &err);
		wait_rejoined(&c);
		printf("round %d ok\n", round_no);
		fflush(stdout);
	}
	if (ckpt_control_kill(&c, NULL, &err) < 0)
		fail_control("kill", &err);
	close_pipes(&p);
	return 0;
}
