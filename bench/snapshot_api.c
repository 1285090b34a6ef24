/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * snapshot_api ROUNDS: the snapshot benchmark's control-API path
 * (docs/performance.md, "Forked checkpoints and snapshots"): what
 * `ckpt_command --snapshot` and `--restore` do, from a tool that links
 * libckpt-control, with no tool to start per request. The computation is
 * one fill_idle (bench/fill_idle.c) under the coordinator of $CKPT_COORD
 * (or the per-user one). Per round: a snapshot (ckpt_control_snapshot),
 * then its restore (ckpt_control_restore_template and the RESTORE order
 * to the template) until the restored fill_idle answers a ping on the
 * pipes given to it as stdio, then the snapshot is dropped. Prints
 * "round SNAPSHOT_US RESTORE_US" per round; at the end the computation
 * is killed (the restored process runs on this tool's pipes).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/control.h"
#include "../control/template_orders.h"

#define ORDER_WAIT_MS	10000
#define ANSWER_WAIT_MS	10000

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void die(const char *what, const struct ckpt_control_error *err)
{
	fprintf(stderr, "snapshot_api: %s: %s\n", what, err->message);
	exit(1);
}

/* The restored process's stdin and stdout: ours while the template
 * takes them. */
struct app_pipes {
	int to_app, from_app;
};

static int order_restore_on(const struct template_ref *t,
			    struct app_pipes *p)
{
	struct ckpt_template_report rep;
	int in[2], out[2], rfd, r;

	if (pipe(in) < 0 || pipe(out) < 0)
		return -errno;
	r = template_restore_on(t, (int[3]){ in[0], out[1], 2 },
				ORDER_WAIT_MS, &rfd, &rep);
	close(in[0]);
	close(out[1]);
	if (r == 0)
		close(rfd);	/* its end report is not wanted */
	p->to_app = in[1];
	p->from_app = out[0];
	return r;
}

/* Until a "pong" line comes from the restored process: 0 or -errno. */
static int ping(const struct app_pipes *p)
{
	char buf[4096];
	size_t got = 0;
	struct pollfd pf = { p->from_app, POLLIN, 0 };

	if (write(p->to_app, "ping\n", 5) != 5)
		return -EPIPE;
	for (;;) {
		ssize_t n;

		if (poll(&pf, 1, ANSWER_WAIT_MS) <= 0)
			return -ETIMEDOUT;
		n = read(p->from_app, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			return -EPIPE;
		got += n;
		buf[got] = 0;
		if (strstr(buf, "pong"))
			return 0;
		if (got == sizeof(buf) - 1)
			got = 0;
	}
}

static void close_pipes(struct app_pipes *p)
{
	if (p->to_app >= 0)
		close(p->to_app);
	if (p->from_app >= 0)
		close(p->from_app);
	p->to_app = p->from_app = -1;
}

static uint64_t restore(struct ckpt_control *c, uint64_t id,
			struct app_pipes *p)
{
	struct ckpt_control_reply rep;
	struct ckpt_control_error err;
	struct template_ref t;
	uint64_t t0 = now_us();
	int r;

	if (ckpt_control_restore_template(c, id, &rep, &err) < 0)
		die("restore", &err);
	if (template_parse(rep.text, &t) < 0) {
		fprintf(stderr, "snapshot_api: snapshot %" PRIu64 " is no "
			"template snapshot: %s\n", id, rep.text);
		exit(1);
	}
	ckpt_control_reply_free(&rep);
	close_pipes(p);		/* the process they led to is killed */
	r = order_restore_on(&t, p);
	if (r == 0)
		r = ping(p);
	if (r < 0) {
		fprintf(stderr, "snapshot_api: restore of snapshot %" PRIu64
			" (template %d): %s\n", id, (int)t.pid,
			template_strerror(r));
		exit(1);
	}
	return now_us() - t0;
}

/* The next snapshot waits for the restored process to have joined the
 * coordinator again (untimed, at most 10 s). */
static void wait_rejoined(struct ckpt_control *c)
{
	struct ckpt_control_error err;
	int r = template_wait_restored_joined(c, 10000, &err);

	if (r == -ETIMEDOUT) {
		fprintf(stderr, "snapshot_api: the restored process did not "
			"join the coordinator within 10 s\n");
		exit(1);
	}
	if (r < 0)
		die("list", &err);
}

int main(int argc, char **argv)
{
	struct ckpt_control c;
	struct ckpt_control_error err;
	struct app_pipes p = { -1, -1 };
	int rounds = argc == 2 ? atoi(argv[1]) : 0;

	if (rounds <= 0) {
		fprintf(stderr, "usage: snapshot_api ROUNDS\n");
		return 2;
	}
	if (ckpt_control_open(&c, NULL, &err) < 0)
		die("connecting", &err);
	for (int i = 0; i < rounds; i++) {
		uint64_t t0 = now_us(), id, snap_us, restore_us;

		if (ckpt_control_snapshot(&c, &id, NULL, &err) < 0)
			die("snapshot", &err);
		snap_us = now_us() - t0;
		restore_us = restore(&c, id, &p);
		if (ckpt_control_drop(&c, id, NULL, &err) < 0)
			die("drop", &err);
		wait_rejoined(&c);
		printf("round %" PRIu64 " %" PRIu64 "\n", snap_us, restore_us);
		fflush(stdout);
	}
	if (ckpt_control_kill(&c, NULL, &err) < 0)
		die("kill", &err);
	close_pipes(&p);
	return 0;
}
