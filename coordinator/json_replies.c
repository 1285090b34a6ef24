// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The replies of ckpt_command --json (CKPT_CMD_F_JSON): STATUS, LIST and
 * the CHECKPOINT result as one JSON object each, in the schemas of
 * docs/json.md (docs/schemas/). Names from the processes go out as they
 * came, escaped (json_out.h): a script gets the real program name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coordinator.h"
#include "ckpt/json_out.h"

#define JSON_SCHEMA_VERSION	1

/* A JSON string of at most len bytes of a fixed-size field of a peer's
 * message (it may lack its NUL). */
static void json_field(struct json_out *j, const char *key, const char *s,
		       size_t len)
{
	char tmp[128];

	snprintf(tmp, sizeof(tmp), "%.*s", (int)(len < sizeof(tmp) ?
						   len : sizeof(tmp) - 1), s);
	json_str(j, key, tmp);
}

/* A member whose value may be unknown: null then. */
static void json_i64_or_null(struct json_out *j, const char *key,
			     int64_t value)
{
	if (value < 0) {
		json_key(j, key);
		fputs("null", j->f);
	} else {
		json_i64(j, key, value);
	}
}

static void json_process_identity(struct json_out *j, const struct conn *p)
{
	const struct ckpt_msg_hello *h = &p->proc.hello;

	json_i64(j, "vpid", h->vpid);
	json_i64(j, "pid", h->real_pid);
	json_field(j, "host", h->hostname, sizeof(h->hostname));
	json_field(j, "program", h->program, sizeof(h->program));
}

/* Bytes the running round wrote so far, and about how many it will
 * write: the processes on this host only (others are not looked at). */
static void round_bytes(struct coordinator *co, uint64_t *done,
			uint64_t *expected)
{
	*done = *expected = 0;
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];
		uint64_t w;

		if (!round_in(co, c) || !co->round.writing)
			continue;
		/* read when asked, not at DO_WRITE for every process of
		 * every round: the memory of a stopped process stays */
		if (!c->proc.expected_bytes)
			c->proc.expected_bytes = proc_resident_bytes(c);
		*expected += c->proc.expected_bytes;
		w = proc_written_bytes(co, c);
		if (w != PROGRESS_UNKNOWN &&
		    c->proc.wchar_at_write != PROGRESS_UNKNOWN &&
		    w >= c->proc.wchar_at_write)
			*done += w - c->proc.wchar_at_write;
	}
}

static void json_round(struct coordinator *co, struct json_out *j)
{
	struct round *r = &co->round;
	uint64_t done, expected;

	if (!r->active) {
		json_key(j, "round");
		fputs("null", j->f);
		return;
	}
	round_bytes(co, &done, &expected);
	json_open(j, "round", '{');
	json_u64(j, "generation", r->generation);
	json_str(j, "phase", round_phase_name(r));
	json_i64(j, "processes", r->nprocs);
	json_i64(j, "elapsed_ms", now_ms() - r->start_ms);
	json_bool(j, "failing", r->failed);
	json_u64(j, "bytes_written", done);
	json_u64(j, "bytes_expected", expected);
	json_close(j, '}');
}

static void json_last(struct json_out *j, const char *key,
		      const struct last_round *l, int64_t now)
{
	if (!l->generation) {
		json_key(j, key);
		fputs("null", j->f);
		return;
	}
	json_open(j, key, '{');
	json_u64(j, "generation", l->generation);
	json_bool(j, "ok", l->ok);
	json_i64(j, "processes", l->nprocs);
	json_i64(j, "duration_ms", (int64_t)l->ms);
	json_i64(j, "age_s", (now - l->end_ms) / 1000);
	json_close(j, '}');
}

static void json_status_processes(struct coordinator *co, struct json_out *j)
{
	json_open(j, "processes", '[');
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *p = co->conns[i];

		if (p->kind != CONN_PROCESS || p->eof)
			continue;
		json_open(j, NULL, '{');
		json_process_identity(j, p);
		json_str(j, "state", proc_state_name(p->proc.state));
		json_bool(j, "kernel_module",
			  p->proc.hello.flags & CKPT_HELLO_F_ACCEL);
		json_close(j, '}');
	}
	json_close(j, ']');
}

/* Send what was written to the memstream, or ENOMEM. */
static void reply_stream(struct conn *c, FILE *f, char **text)
{
	if (fclose(f) || !*text) {
		conn_reply(c, ENOMEM, "no memory for the JSON reply\n");
	} else {
		conn_reply(c, 0, *text);
	}
	free(*text);
}

void json_reply_status(struct coordinator *co, struct conn *c)
{
	char *text = NULL, id[32];
	size_t len;
	FILE *f = open_memstream(&text, &len);
	struct json_out j = { .f = f };
	int64_t now = now_ms();

	if (!f) {
		conn_reply(c, ENOMEM, "no memory for the JSON reply\n");
		return;
	}
	snprintf(id, sizeof(id), "%016llx",
		 (unsigned long long)co->computation_id);
	json_open(&j, NULL, '{');
	json_i64(&j, "schema_version", JSON_SCHEMA_VERSION);
	json_str(&j, "coordinator", co->addr);
	json_i64(&j, "coordinator_pid", getpid());
	json_str(&j, "computation", id);
	json_i64(&j, "process_count", count_processes(co));
	json_i64_or_null(&j, "interval_s",
			 co->interval_s ? (int64_t)co->interval_s : -1);
	json_last(&j, "last_checkpoint", &co->last_ok, now);
	json_last(&j, "last_round", &co->last, now);
	json_round(co, &j);
	json_status_processes(co, &j);
	json_close(&j, '}');
	fputc('\n', f);
	reply_stream(c, f, &text);
}

void json_reply_list(struct coordinator *co, struct conn *c)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	struct json_out j = { .f = f };

	if (!f) {
		conn_reply(c, ENOMEM, "no memory for the JSON reply\n");
		return;
	}
	json_open(&j, NULL, '{');
	json_i64(&j, "schema_version", JSON_SCHEMA_VERSION);
	json_open(&j, "processes", '[');
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *p = co->conns[i];

		if (p->kind != CONN_PROCESS || p->eof)
			continue;
		json_open(&j, NULL, '{');
		json_process_identity(&j, p);
		json_field(&j, "id", p->proc.hello.unique_id,
			   sizeof(p->proc.hello.unique_id));
		json_bool(&j, "restarted",
			  p->proc.hello.flags & CKPT_HELLO_F_RESTARTED);
		json_str(&j, "state", proc_state_name(p->proc.state));
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_close(&j, '}');
	fputc('\n', f);
	reply_stream(c, f, &text);
}

/* --- the images of a round ------------------------------------------ */

/* Its size when the coordinator can see it: written on this host by a
 * process the kernel vouched for, or an image it committed itself. Only
 * a JSON reply tells it, so it is looked up then (image_size): a stat
 * per image of every round was part of the coordinator's share of it
 * (docs/performance.md, "Scale"). */
#define IMAGE_SIZE_UNREAD (-2)

static int64_t image_size(const struct round_image *im)
{
	struct stat st;

	if (im->size != IMAGE_SIZE_UNREAD)
		return im->size;
	return stat(im->path, &st) == 0 ? (int64_t)st.st_size : -1;
}

void round_images_add(struct round *r, const char *path,
		      const struct conn *c)
{
	struct round_image *n = realloc(r->images, (size_t)(r->nimages + 1) *
					sizeof(*n));
	struct round_image *im;

	if (!n)
		return;		/* the text reply still has every path */
	r->images = n;
	im = &n[r->nimages];
	memset(im, 0, sizeof(*im));
	im->path = strdup(path);
	if (!im->path)
		return;
	r->nimages++;
	im->size = c && !c->local_peer ? -1 : IMAGE_SIZE_UNREAD;
	im->durable_ms = now_ms() - r->start_ms;
	im->written_ms = c ? c->proc.written_ms : -1;
	if (c) {
		const struct ckpt_msg_hello *h = &c->proc.hello;

		snprintf(im->program, sizeof(im->program), "%.*s",
			 (int)sizeof(h->program) - 1, h->program);
		snprintf(im->host, sizeof(im->host), "%.*s",
			 (int)sizeof(h->hostname) - 1, h->hostname);
		im->vpid = h->vpid;
		im->pid = h->real_pid;
	}
}

void round_images_free(struct round *r)
{
	for (int i = 0; i < r->nimages; i++)
		free(r->images[i].path);
	free(r->images);
	r->images = NULL;
	r->nimages = 0;
}

static void json_image(struct json_out *j, const struct round_image *im)
{
	json_open(j, NULL, '{');
	json_str(j, "path", im->path);
	json_i64_or_null(j, "size_bytes", image_size(im));
	json_i64_or_null(j, "vpid", im->pid ? im->vpid : -1);
	json_i64_or_null(j, "pid", im->pid ? im->pid : -1);
	json_str(j, "host", im->host[0] ? im->host : NULL);
	json_str(j, "program", im->program[0] ? im->program : NULL);
	json_i64_or_null(j, "written_ms", im->written_ms);
	json_i64(j, "durable_ms", im->durable_ms);
	json_close(j, '}');
}

/* Each line of text as one string of an array named key. */
static void json_lines(struct json_out *j, const char *key, const char *text)
{
	const char *line, *end;
	char tmp[4096];

	json_open(j, key, '[');
	for (line = text; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		if (end == line)
			continue;
		snprintf(tmp, sizeof(tmp), "%.*s", (int)(end - line), line);
		json_str(j, NULL, tmp);
	}
	json_close(j, ']');
}

char *json_checkpoint_result(struct coordinator *co, int status)
{
	struct round *r = &co->round;
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	struct json_out j = { .f = f };

	if (!f)
		return NULL;
	json_open(&j, NULL, '{');
	json_i64(&j, "schema_version", JSON_SCHEMA_VERSION);
	json_bool(&j, "ok", !status);
	json_u64(&j, "generation", r->generation);
	json_i64(&j, "processes", r->nprocs);
	json_i64(&j, "duration_ms", now_ms() - r->start_ms);
	json_i64_or_null(&j, "suspend_ms", r->suspended_ms ?
			 r->suspended_ms - r->start_ms : -1);
	json_bool(&j, "compress_requested", r->flags & CKPT_CHECKPOINT_F_COMPRESS);
	json_bool(&j, "incremental_requested", r->flags & CKPT_CHECKPOINT_F_INCREMENTAL);
	json_open(&j, "images", '[');
	for (int i = 0; !status && i < r->nimages; i++)
		json_image(&j, &r->images[i]);
	json_close(&j, ']');
	json_lines(&j, "not_restored", status ? "" : buf_str(&r->unrestored));
	json_lines(&j, "errors", status ? buf_str(&r->failures) : "");
	json_close(&j, '}');
	fputc('\n', f);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}
