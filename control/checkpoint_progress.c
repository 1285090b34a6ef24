// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The progress line of ckpt_command --checkpoint on a terminal: while the
 * checkpoint runs, a thread asks the coordinator for its status (JSON,
 * the "round" object) every CKPT_PROGRESS_MS milliseconds (default
 * PROGRESS_POLL_MS) and redraws one line on stderr: bytes written, rate,
 * time left. Nothing is drawn when stderr is not a terminal, nor for a
 * checkpoint done before the first poll.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint_progress.h"
#include "tool_common.h"
#include "../protocol/client_internal.h"

#define PROGRESS_POLL_MS	250

/* The number after "key": inside the JSON object text starting at obj;
 * 0 when absent. The round object holds numbers and fixed words only. */
static uint64_t json_number(const char *obj, const char *end,
			    const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(obj, pat);
	if (!p || p >= end)
		return 0;
	return strtoull(p + strlen(pat), NULL, 10);
}

static const char *json_word(const char *obj, const char *end,
			     const char *key, char *out, size_t len)
{
	char pat[64];
	const char *p;
	size_t n;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(obj, pat);
	out[0] = 0;
	if (!p || p >= end)
		return out;
	p += strlen(pat);
	n = strcspn(p, "\"");
	snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p);
	return out;
}

/* "12.3 MiB" */
static const char *human_bytes(uint64_t n, char *out, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return out;
}

void progress_format(char *out, size_t len, const char *what,
		     uint64_t done, uint64_t expected, double seconds)
{
	char d[32], e[32], r[32];
	double rate = seconds > 0 ? (double)done / seconds : 0;

	human_bytes(done, d, sizeof(d));
	human_bytes((uint64_t)rate, r, sizeof(r));
	if (expected > done && rate > 0)
		snprintf(out, len, "%s: %s of ~%s written, %s/s, ~%.0f s left",
			 what,
			 d, human_bytes(expected, e, sizeof(e)), r,
			 (double)(expected - done) / rate + 0.5);
	else
		snprintf(out, len, "%s: %s written, %s/s, %.1f s", what, d,
			 r, seconds);
}

/* One line of the running round, from a status reply; "" when idle. */
static void round_line(const char *status, char *out, size_t len)
{
	const char *obj = strstr(status, "\"round\":{");
	const char *end;
	char what[64], phase[16];
	uint64_t gen, ms;

	out[0] = 0;
	if (!obj)
		return;
	end = strchr(obj, '}');
	gen = json_number(obj, end, "generation");
	ms = json_number(obj, end, "elapsed_ms");
	json_word(obj, end, "phase", phase, sizeof(phase));
	snprintf(what, sizeof(what), "checkpoint %" PRIu64, gen);
	if (!strcmp(phase, "suspend")) {
		snprintf(out, len, "%s: stopping %" PRIu64 " process(es), "
			 "%.1f s", what, json_number(obj, end, "processes"),
			 (double)ms / 1000);
		return;
	}
	if (!strcmp(phase, "commit") || !strcmp(phase, "sync")) {
		char d[32];

		snprintf(out, len, "%s: %s written, %s", what,
			 human_bytes(json_number(obj, end, "bytes_written"), d,
				     sizeof(d)), phase[0] == 's' ?
			 "syncing to disk" : "putting the images in place");
		return;
	}
	progress_format(out, len, what, json_number(obj, end,
						    "bytes_written"),
			json_number(obj, end, "bytes_expected"),
			(double)ms / 1000);
}

static void *progress_thread(void *arg)
{
	struct checkpoint_progress *p = arg;
	long every_ms = ckpt_cc_progress_ms("ckpt_command",
					     PROGRESS_POLL_MS);
	struct timespec until;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct ckpt_control_reply rep = { 0 };
		char line[256];

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += every_ms / 1000;
		until.tv_nsec += every_ms % 1000 * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		while (!p->stop && pthread_cond_timedwait(&p->wake, &p->lock,
							  &until) != ETIMEDOUT)
			;
		if (p->stop)
			break;
		pthread_mutex_unlock(&p->lock);
		line[0] = 0;
		if (ckpt_control_status(&p->control, &rep, NULL) == 0)
			round_line(rep.text, line, sizeof(line));
		ckpt_control_reply_free(&rep);
		pthread_mutex_lock(&p->lock);
		if (line[0] && !p->stop) {
			fprintf(stderr, "\r\033[K%s", line);
			p->drawn = 1;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

void checkpoint_progress_start(struct checkpoint_progress *p,
			       const struct ckpt_control *c)
{
	memset(p, 0, sizeof(*p));
	if (!isatty(STDERR_FILENO))
		return;
	p->control = *c;
	p->control.json = 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	p->running = pthread_create(&p->thread, NULL, progress_thread, p) == 0;
}

/* Stop polling and clear the line, so what follows starts clean. */
void checkpoint_progress_stop(struct checkpoint_progress *p)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	if (p->drawn)
		fputs("\r\033[K", stderr);
	p->running = 0;
}
