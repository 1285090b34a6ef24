// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One checkpoint round, driven only by events (no sleeps, no polling):
 *
 *   start:   DO_SUSPEND{g} to every process
 *   phase 1: all SUSPENDED      -> DO_WRITE{g} to every process
 *   phase 2: all WRITTEN        -> DO_RESUME (threads stopped until then)
 *            all SYNCED         -> DO_COMMIT
 *            all DURABLE        -> reply 0 + image paths
 *   failure: FAILED, a disconnect or a timeout; in phase 1 every process
 *            that suspended (or may still) gets DO_ABORT; the reply names
 *            each failed process, one line each. A process that leaves
 *            after WRITTEN is no failure: the coordinator syncs and
 *            commits the image it left (orphan_images.c).
 *
 * CHECKPOINT commands that arrive during a round are queued and served by
 * one new round right after it (the program state they ask to save is
 * newer than the running round's). See docs/protocol.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "coordinator.h"
#include "../protocol/sanitize.h"

const char *proc_state_name(enum proc_state s)
{
	static const char *const names[] = {
		[PROC_IDLE] = "idle",
		[PROC_SUSPENDING] = "suspending",
		[PROC_SUSPENDED] = "suspended",
		[PROC_WRITING] = "writing",
		[PROC_WRITTEN] = "written",
		[PROC_SYNCED] = "synced",
		[PROC_COMMITTING] = "committing",
		[PROC_DURABLE] = "durable",
		[PROC_FAILED] = "failed",
		[PROC_ABORTING] = "aborting",
		[PROC_ABORTED] = "aborted",
		[PROC_DISCARDING] = "discarding",
	};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

bool round_in(struct coordinator *co, struct conn *c)
{
	return co->round.active && c->kind == CONN_PROCESS &&
	       c->proc.round_generation == co->round.generation;
}

bool round_state_is_final(enum proc_state s)
{
	return s == PROC_DURABLE || s == PROC_FAILED || s == PROC_ABORTED ||
	       s == PROC_IDLE;
}

/* The round's processes per host, counted once per DO_WRITE: a few
 * hosts, many processes. A host past the table's room is not counted
 * (0: the images then record nothing to check). */
#define COUNTED_HOSTS 64

struct host_count {
	const char *host;
	uint32_t n;
};

static int count_members_by_host(struct coordinator *co,
				 struct host_count *t)
{
	int nt = 0;

	for (size_t i = 0; i < co->nconns; i++) {
		const char *h = co->conns[i]->proc.hello.hostname;
		int k = 0;

		if (!round_in(co, co->conns[i]))
			continue;
		while (k < nt && strcmp(t[k].host, h))
			k++;
		if (k == nt && nt == COUNTED_HOSTS)
			continue;
		if (k == nt)
			t[nt++] = (struct host_count){ h, 0 };
		t[k].n++;
	}
	return nt;
}

static uint32_t members_on_host_of(const struct host_count *t, int nt,
				   const struct conn *c)
{
	for (int k = 0; k < nt; k++)
		if (!strcmp(t[k].host, c->proc.hello.hostname))
			return t[k].n;
	return 0;
}

static void send_do(struct conn *c, uint16_t type, uint64_t generation,
		    uint32_t flags, const char *dir, uint32_t members)
{
	struct ckpt_msg_do_checkpoint m;

	memset(&m, 0, sizeof(m));
	m.generation = generation;	/* ckpt_dir "": the process's own */
	m.flags = flags;
	m.members_on_host = members;
	if (flags & CKPT_CHECKPOINT_F_TEMPLATE)
		m.coordinator_pid = (uint32_t)getpid();
	snprintf(m.ckpt_dir, sizeof(m.ckpt_dir), "%s", dir ? dir : "");
	conn_send(c, type, &m, sizeof(m));
}

/* Phase 1 failed: nobody may stay suspended. A process still suspending
 * reads DO_ABORT right after it suspends (messages stay in order). */
static void abort_suspended(struct coordinator *co)
{
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (!round_in(co, c))
			continue;
		if (c->proc.state == PROC_SUSPENDED) {
			conn_send(c, CKPT_MSG_DO_ABORT, NULL, 0);
			c->proc.state = PROC_ABORTED;
		} else if (c->proc.state == PROC_SUSPENDING) {
			conn_send(c, CKPT_MSG_DO_ABORT, NULL, 0);
			c->proc.state = PROC_ABORTING;
		}
	}
}

/* One line per failed process: who it is and what went wrong. */
static void record_failure_of(struct coordinator *co, const char *name,
			      int err, const char *what)
{
	struct round *r = &co->round;

	buf_printf(&r->failures, "%s: checkpoint %llu failed: %s\n", name,
		   (unsigned long long)r->generation, what);
	coord_log("checkpoint %llu: %s: %s", (unsigned long long)r->generation,
		  name, what);
	if (!r->first_error)
		r->first_error = err > 0 ? err : EIO;
}

static void record_failure(struct coordinator *co, struct conn *c, int err,
			   const char *what)
{
	char name[256];

	proc_name(c, name, sizeof(name));
	record_failure_of(co, name, err, what);
	c->proc.state = PROC_FAILED;
}

/* Phase 2 failed before DO_COMMIT: every image written for it is
 * discarded, every previous image stays. */
static void abort_uncommitted(struct coordinator *co)
{
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (!round_in(co, c))
			continue;
		if (c->proc.state == PROC_WRITING ||
		    c->proc.state == PROC_WRITTEN ||
		    c->proc.state == PROC_SYNCED) {
			conn_send(c, CKPT_MSG_DO_ABORT, NULL, 0);
			c->proc.state = PROC_DISCARDING;
		}
	}
}

static void mark_round_failed(struct coordinator *co)
{
	struct round *r = &co->round;

	if (r->failed)
		return;
	r->failed = true;
	if (!r->writing) {
		abort_suspended(co);
	} else if (!r->committing) {
		abort_uncommitted(co);
		orphans_discard(co);
	}
	/* those told DO_ABORT confirm within the phase timeout */
	if (!r->committing)
		round_timeouts_start_phase(co, co->phase_timeout_ms);
}

/* Every process has written its image: none saves anything any more, so
 * all may run again (those that wait for it: older libckpt did not). */
static void resume_written(struct coordinator *co)
{
	co->round.resumed = true;
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (round_in(co, c) && c->proc.state == PROC_WRITTEN &&
		    (c->proc.hello.flags & CKPT_HELLO_F_RESUME_BARRIER))
			conn_send(c, CKPT_MSG_DO_RESUME, NULL, 0);
	}
	round_timeouts_start_phase(co, co->write_timeout_ms); /* sync */
}

/* Every image is synced (or, from an older libckpt, already durable):
 * each may now replace its previous one. */
static void start_committing(struct coordinator *co)
{
	co->round.committing = true;
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (round_in(co, c) && c->proc.state == PROC_SYNCED) {
			conn_send(c, CKPT_MSG_DO_COMMIT, NULL, 0);
			c->proc.state = PROC_COMMITTING;
		}
	}
	round_timeouts_start_phase(co, co->write_timeout_ms);
	orphans_commit(co);
}

void round_fail_process(struct coordinator *co, struct conn *c, int err,
			const char *what)
{
	record_failure(co, c, err, what);
	mark_round_failed(co);
}

/* The warnings stay on stderr too; the JSON holds them as well. */
static void reply_json(struct coordinator *co, struct conn *c, int status,
		       const char *warnings)
{
	char *json = json_checkpoint_result(co, status);

	if (!json) {
		conn_reply(c, ENOMEM, "no memory for the JSON reply\n");
		return;
	}
	conn_reply_warnings(c, status, json, warnings);
	free(json);
}

static void reply_requesters(struct coordinator *co, int status,
			     const char *text, const char *warnings)
{
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (c->pending == PENDING_CHECKPOINT &&
		    c->pending_generation == co->round.generation) {
			if (c->reply_json)
				reply_json(co, c, status, warnings);
			else
				conn_reply_warnings(c, status, text, warnings);
			c->pending = PENDING_NONE;
		}
	}
}

static bool have_queued_requests(struct coordinator *co)
{
	for (size_t i = 0; i < co->nconns; i++)
		if (co->conns[i]->pending == PENDING_CHECKPOINT &&
		    co->conns[i]->pending_generation == 0 &&
		    !co->conns[i]->eof)
			return true;
	return false;
}

static void round_start(struct coordinator *co, uint32_t flags);

/* A failure of the whole round (not of one process): in the reply and
 * the log; the first one sets the round's error. */
void round_note_failure(struct coordinator *co, int err, const char *what)
{
	struct round *r = &co->round;

	buf_printf(&r->failures, "checkpoint %llu failed: %s\n",
		   (unsigned long long)r->generation, what);
	coord_log("checkpoint %llu: %s", (unsigned long long)r->generation,
		  what);
	if (!r->first_error)
		r->first_error = err;
}

/* Every participant left while suspending (exited, or exec'd and never
 * came back) and none was waited for: nothing of the computation was
 * saved, which is no success. */
static void fail_without_members(struct coordinator *co)
{
	struct round *r = &co->round;
	const char *what = "every process of the computation left while it "
			   "was being suspended (exited, or exec'd and did "
			   "not join again); no image was written";

	round_note_failure(co, ESRCH, what);
	r->first_error = ESRCH;
	r->failed = true;
}

/* A snapshot's round is no checkpoint: no restart script, not the last
 * checkpoint; its requester gets the id. */
/* The id, and with the warnings why it is no template if it is not. */
static void reply_snapshot_taken(struct coordinator *co, const char *text)
{
	struct buf notes = { 0 };
	int members = 0;

	for (size_t i = 0; i < co->nconns; i++)
		members += round_in(co, co->conns[i]);
	buf_printf(&notes, "%s", buf_str(&co->round.unrestored));
	snapshot_note_kind(co, members, &notes);
	reply_requesters(co, 0, text, buf_str(&notes));
	buf_free(&notes);
}

static void finish_snapshot(struct coordinator *co)
{
	struct round *r = &co->round;
	struct buf reply = { 0 };

	snapshot_round_done(co, r->snapshot_id, !r->failed,
			    buf_str(&r->paths), r->dir, &reply);
	if (r->failed)
		reply_requesters(co, r->first_error, buf_str(&r->failures),
				 "");
	else
		reply_snapshot_taken(co, buf_str(&reply));
	buf_free(&reply);
}

/* The coordinator's own CPU time (user + system): its share of a round
 * is what it spends between the round's start and its end
 * (docs/performance.md, "Scale"); the rest is the processes' work and
 * the messages' transit. */
static double cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void round_finish(struct coordinator *co)
{
	struct round *r = &co->round;
	int64_t end = now_ms();
	double ms = (double)(end - r->start_ms);
	double busy = cpu_ms() - r->cpu_start_ms;

	if (!r->failed && !r->paths.len)
		fail_without_members(co);
	if (!r->snapshot_id)	/* --status: the last checkpoint */
		co->last = (struct last_round){
			.generation = r->generation, .ok = !r->failed,
			.nprocs = r->nprocs, .ms = ms, .busy_ms = busy,
			.end_ms = end,
		};
	if (r->snapshot_id) {
		finish_snapshot(co);
	} else if (!r->failed) {
		co->last_ok = co->last;
		coord_log("checkpoint %llu: %d process(es) durable in %.0f ms "
			  "(suspended after %lld ms; coordinator busy %.1f ms)",
			  (unsigned long long)r->generation, r->nprocs, ms,
			  (long long)(r->suspended_ms - r->start_ms), busy);
		write_restart_scripts(co, buf_str(&r->paths),
				      buf_str(&r->hosts), r->generation,
				      &r->unrestored);
		reply_requesters(co, 0, buf_str(&r->paths),
				 buf_str(&r->unrestored));
	} else {
		coord_log("checkpoint %llu failed after %.0f ms",
			  (unsigned long long)r->generation, ms);
		reply_requesters(co, r->first_error, buf_str(&r->failures),
				 "");
	}
	for (size_t i = 0; i < co->nconns; i++) {
		if (round_in(co, co->conns[i]))
			co->conns[i]->proc.state = PROC_IDLE;
		proc_files_close(co->conns[i]);
	}
	orphans_discard(co);
	r->active = false;
	if (co->interval_s)
		co->next_interval_ms = end + (int64_t)co->interval_s * 1000;
	if (have_queued_requests(co))
		round_start(co, co->queued_flags);
	co->queued_flags = 0;
}

/* A template restored by a fork is for a round of one member (checked
 * again here: a child may have joined while it suspended), which can end
 * at once; a round of several makes templates that only write their
 * images when asked (docs/embedding.md, "Template snapshots of a tree"). */
static void settle_template_flags(struct coordinator *co)
{
	struct round *r = &co->round;
	int members = 0;

	for (size_t i = 0; i < co->nconns; i++)
		members += round_in(co, co->conns[i]);
	if (members != 1)
		r->flags &= ~(uint32_t)CKPT_CHECKPOINT_F_TEMPLATE_NOW;
	else if (r->flags & CKPT_CHECKPOINT_F_TEMPLATE)
		r->flags |= CKPT_CHECKPOINT_F_TEMPLATE_NOW;
}

static void start_writing(struct coordinator *co)
{
	struct round *r = &co->round;
	struct host_count hosts[COUNTED_HOSTS];
	int nhosts = count_members_by_host(co, hosts);

	r->writing = true;
	settle_template_flags(co);
	r->suspended_ms = now_ms();
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (round_in(co, c)) {
			send_do(c, CKPT_MSG_DO_WRITE, r->generation, r->flags,
				r->dir, r->flags & CKPT_CHECKPOINT_F_SNAPSHOT ?
				0 : members_on_host_of(hosts, nhosts, c));
			c->proc.state = PROC_WRITING;
			c->proc.image_tmp[0] = 0;
			c->proc.wchar_at_write = proc_written_bytes(co, c);
			c->proc.expected_bytes = 0; /* json_replies.c */
			c->proc.written_ms = -1;
		}
	}
	round_timeouts_start_phase(co, co->write_timeout_ms);
	for (size_t i = 0; i < co->nconns; i++)
		if (round_in(co, co->conns[i]))
			co->conns[i]->proc.wchar =
				co->conns[i]->proc.wchar_at_write;
}

/* Move the round on after any event: to phase 2, or to its end. */
void round_advance(struct coordinator *co)
{
	struct round *r = &co->round;
	bool all_suspended = true, all_final = true, all_synced = true;
	bool all_written = true;

	if (!r->active)
		return;
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (!round_in(co, c))
			continue;
		if (c->proc.state != PROC_SUSPENDED)
			all_suspended = false;
		if (!round_state_is_final(c->proc.state))
			all_final = false;
		if (c->proc.state != PROC_SYNCED &&
		    c->proc.state != PROC_DURABLE)
			all_synced = false;
		if (c->proc.state != PROC_WRITTEN &&
		    c->proc.state != PROC_SYNCED &&
		    c->proc.state != PROC_DURABLE)
			all_written = false;
	}
	if (r->writing && !r->failed && !r->resumed && all_written)
		resume_written(co);
	if (r->writing && !r->failed && !r->committing && all_synced) {
		start_committing(co);
		/* only taken-over images: the round may be complete */
	}
	if (!r->writing && !r->failed && all_suspended) {
		int complete = members_complete(co);

		if (complete > 0) {
			start_writing(co);
			return;
		}
		if (complete < 0)
			mark_round_failed(co);
		else
			return; /* waiting for a forked or exec'd member */
	}
	if (all_final)
		round_finish(co);
}

/* A snapshot of one process: a template; made at once after the suspend
 * when the process is on this host (its coordinator on a Unix socket). */
static uint32_t template_flags(struct coordinator *co)
{
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (c->kind == CONN_PROCESS && !c->eof &&
		    proc_on_this_host(c))
			return CKPT_CHECKPOINT_F_TEMPLATE |
			       CKPT_CHECKPOINT_F_TEMPLATE_NOW;
	}
	return CKPT_CHECKPOINT_F_TEMPLATE;
}

/* A round that cannot start: every request waiting for one is told
 * why. */
static void refuse_round(struct coordinator *co, int err, const char *why)
{
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (c->pending != PENDING_CHECKPOINT)
			continue;
		conn_reply(c, err, why);
		c->pending = PENDING_NONE;
	}
}

static void round_start_into(struct coordinator *co, uint32_t flags,
			     const char *dir, uint64_t snapshot_id)
{
	struct round *r = &co->round;
	int64_t now = now_ms();
	char why[512];
	int n;

	conn_catch_up_hellos(co);
	n = count_processes(co);
	if (n == 0) {
		refuse_round(co, ESRCH, "no processes are connected to this "
			     "coordinator; nothing to checkpoint");
		return;
	}
	if (member_in_other_pid_namespace(co, why, sizeof(why)) ||
	    member_traced_by_member(co, why, sizeof(why))) {
		coord_log("checkpoint refused: %s", why);
		refuse_round(co, EPERM, why);
		return;
	}
	buf_free(&r->paths);
	buf_free(&r->hosts);
	buf_free(&r->failures);
	buf_free(&r->unrestored);
	round_images_free(r);
	*r = (struct round){
		.active = true,
		.generation = ++co->generation,
		.flags = flags,
		.snapshot_id = snapshot_id,
		.nprocs = n,
		.start_ms = now,
		.cpu_start_ms = cpu_ms(),
		.next_stop_check_ms = now + COORD_STOP_CHECK_MS,
	};
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	if (snapshot_id && !snapshot_images_forced())
		r->flags |= n == 1 ? template_flags(co) :
			    CKPT_CHECKPOINT_F_TEMPLATE;
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (c->pending == PENDING_CHECKPOINT && !c->pending_generation)
			c->pending_generation = r->generation;
		if (c->kind != CONN_PROCESS || c->eof)
			continue;
		c->proc.round_generation = r->generation;
		c->proc.state = PROC_SUSPENDING;
		buf_free(&c->proc.unrestored);
		members_forget_children(c);
		send_do(c, CKPT_MSG_DO_SUSPEND, r->generation, r->flags,
			r->dir, 0);
	}
	round_timeouts_start_phase(co, co->phase_timeout_ms);
	/* a send may have failed: the reaper reports it as a disconnect */
}

static void round_start(struct coordinator *co, uint32_t flags)
{
	round_start_into(co, flags, "", 0);
}

/* A snapshot's round: the requester alone waits for it (checked idle by
 * snapshot_request); its reply is the snapshot's id. */
void round_request_into(struct coordinator *co, struct conn *requester,
			uint32_t flags, const char *dir, uint64_t snapshot_id)
{
	requester->pending = PENDING_CHECKPOINT;
	requester->pending_generation = 0;
	round_start_into(co, flags, dir, snapshot_id);
}

/* flags: CKPT_CHECKPOINT_F_*; a request that joins a round whose
 * images are not written yet adds its flags to it. */
void round_request(struct coordinator *co, struct conn *requester,
		   uint32_t flags)
{
	if (requester) {
		requester->pending = PENDING_CHECKPOINT;
		requester->pending_generation = 0;
	}
	if (!co->round.active)
		round_start(co, flags);
	else if (!co->round.writing)
		co->round.flags |= flags;
	else
		co->queued_flags |= flags;
}

/* What the process said a restart will not restore, one line each,
 * kept until its image is in place (a process that fails says nothing). */
void round_on_unrestored(struct coordinator *co, struct conn *c,
			 const char *p, uint32_t len)
{
	struct ckpt_msg_unrestored u = { 0 };
	uint32_t n;

	memcpy(&u, p, len < sizeof(u) ? len : sizeof(u));
	if (!round_in(co, c) || u.generation != co->round.generation ||
	    len <= sizeof(u))
		return;
	n = len - sizeof(u);
	if (u.text_len < n)
		n = u.text_len;
	buf_free(&c->proc.unrestored);
	buf_append(&c->proc.unrestored, p + sizeof(u), n);
	ckpt_sanitize_in_place(c->proc.unrestored.data, true);
}

/* "app (vpid 7, pid 42, host h): fd 5: an inotify instance ...: why"
 * per line. */
static void record_unrestored_of(struct coordinator *co, const char *name,
				 const char *line)
{
	const char *end;

	for (; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		if (end > line)
			buf_printf(&co->round.unrestored, "%s: %.*s\n", name,
				   (int)(end - line), line);
	}
}

static void record_unrestored(struct coordinator *co, struct conn *c)
{
	char name[256];

	proc_name(c, name, sizeof(name));
	record_unrestored_of(co, name, buf_str(&c->proc.unrestored));
	buf_free(&c->proc.unrestored);
}

/* One image of this round, and the host it was written on with the
 * address the process reached us from ("" for the coordinator's: orphan
 * images are only taken over from this host). */
static void record_path(struct coordinator *co, const char *path,
			const struct conn *c)
{
	buf_printf(&co->round.paths, "%s\n", path);
	round_images_add(&co->round, path, c);
	buf_printf(&co->round.hosts, "%s %s\n",
		   c ? c->proc.hello.hostname : "",
		   c && !c->local_peer ? c->peer_key : "");
}

/* The coordinator committed (or failed to commit) the image of a process
 * that had left after WRITTEN (orphan_images.c). */
void round_orphan_committed(struct coordinator *co, const char *name,
			    const char *path, const char *unrestored,
			    int err, const char *what)
{
	if (err) {
		record_failure_of(co, name, err, what);
		co->round.failed = true; /* committing: nothing to abort */
		return;
	}
	record_unrestored_of(co, name, unrestored);
	record_path(co, path, NULL);
}

static void record_durable(struct coordinator *co, struct conn *c,
			   const struct ckpt_msg_result *res)
{
	char name[256], none[300];

	record_unrestored(co, c);
	if (res->path[0]) {
		record_path(co, res->path, c);
		return;
	}
	proc_name(c, name, sizeof(name));
	snprintf(none, sizeof(none), "(%s reported no image path)", name);
	record_path(co, none, c);
}

static void on_failed(struct coordinator *co, struct conn *c,
		      const struct ckpt_msg_result *res)
{
	char what[1024];

	/* the reason once: many messages already end with strerror() */
	if (res->message[0] && res->error &&
	    !strstr(res->message, strerror(res->error)))
		snprintf(what, sizeof(what), "%s (%s)", res->message,
			 strerror(res->error));
	else if (res->message[0])
		snprintf(what, sizeof(what), "%s", res->message);
	else
		snprintf(what, sizeof(what), "%s", res->error ?
			 strerror(res->error) : "failed, no reason given");
	round_fail_process(co, c, res->error, what);
}

/* Where its new image is, should the process leave before committing it. */
static void remember_image_tmp(struct coordinator *co, struct conn *c,
			       const struct ckpt_msg_result *res)
{
	if (c->proc.written_ms < 0)
		c->proc.written_ms = now_ms() - co->round.start_ms;
	if (res->path[0])
		snprintf(c->proc.image_tmp, sizeof(c->proc.image_tmp), "%s",
			 res->path);
}

/* WRITTEN or SYNCED: its temporary image is known; false when the round
 * failed because another member writes the same image (image_twins.c).
 * Its state stays: told DO_ABORT like the others, it removes its image. */
static bool note_image_tmp(struct coordinator *co, struct conn *c,
			   const struct ckpt_msg_result *res)
{
	char what[1400], name[256];

	remember_image_tmp(co, c, res);
	if (co->round.failed ||
	    round_check_image_twin(co, c, what, sizeof(what)) == 0)
		return true;
	record_failure_of(co, proc_name(c, name, sizeof(name)), EEXIST, what);
	mark_round_failed(co);
	return false;
}

void round_on_result(struct coordinator *co, struct conn *c, uint16_t type,
		     const struct ckpt_msg_result *res)
{
	enum proc_state *st = &c->proc.state;

	if (!round_in(co, c) || res->generation != co->round.generation)
		return;	/* late answer to a finished round: ignore */
	round_timeouts_on_answer(c);
	switch (type) {
	case CKPT_MSG_SUSPENDED:
		if (*st == PROC_SUSPENDING)
			*st = PROC_SUSPENDED;
		else if (*st == PROC_ABORTING)
			*st = PROC_ABORTED;
		break;
	case CKPT_MSG_WRITTEN:
		if (*st == PROC_WRITING)
			*st = PROC_WRITTEN;
		note_image_tmp(co, c, res);
		break;
	case CKPT_MSG_SYNCED:
		if (note_image_tmp(co, c, res) &&
		    (*st == PROC_WRITING || *st == PROC_WRITTEN))
			*st = PROC_SYNCED;
		break;
	case CKPT_MSG_DURABLE:
		/* DISCARDING: an older libckpt renames without waiting;
		 * SUSPENDING: a template made right after the suspend */
		if (*st == PROC_WRITING || *st == PROC_WRITTEN ||
		    *st == PROC_COMMITTING || *st == PROC_DISCARDING ||
		    (*st == PROC_SUSPENDING && (co->round.flags &
		     CKPT_CHECKPOINT_F_TEMPLATE_NOW))) {
			*st = PROC_DURABLE;
			record_durable(co, c, res);
		}
		break;
	case CKPT_MSG_FAILED:
		if (*st == PROC_DISCARDING && res->error == ECANCELED)
			*st = PROC_ABORTED; /* it removed its image as told */
		else if (!round_state_is_final(*st))
			on_failed(co, c, res);
		break;
	}
	round_advance(co);
}

/* It left with its image written, and that image is still wanted: not
 * discarded, or already being committed (no way back then). */
static bool left_after_writing(struct coordinator *co, struct conn *c)
{
	enum proc_state s = c->proc.state;

	return s == PROC_COMMITTING ||
	       (!co->round.failed && (s == PROC_WRITTEN || s == PROC_SYNCED));
}

/* Its image is complete and part of the consistent state: the coordinator
 * makes it durable and commits it (orphan_images.c), or the round fails
 * when it cannot. */
static void take_over_image(struct coordinator *co, struct conn *c)
{
	const char *state = proc_state_name(c->proc.state);
	char why[1024], what[1200];
	int r = orphan_adopt(co, c, why, sizeof(why));

	if (r < 0) {
		snprintf(what, sizeof(what), "the process disconnected while "
			 "%s, and its image cannot be committed without it: "
			 "%s", state, why);
		round_fail_process(co, c, -r == EREMOTE ? ECONNRESET : -r, what);
	} else {
		if (r > 0) {	/* it renamed its image, then left */
			record_unrestored(co, c);
			record_path(co, why, c);
		}
		c->proc.state = PROC_DURABLE;
		if (co->round.committing)
			orphans_commit(co);
	}
	round_advance(co);
}

void round_on_gone(struct coordinator *co, struct conn *c)
{
	char what[128];

	if (!round_in(co, c) || round_state_is_final(c->proc.state))
		return;
	if (c->proc.state == PROC_DISCARDING) {
		c->proc.state = PROC_ABORTED; /* its new image is not used */
		round_advance(co);
		return;
	}
	/* exec'd (it connects again) or exited: round_members.c */
	if (c->proc.state == PROC_SUSPENDING && !co->round.failed &&
	    members_on_left_while_suspending(co, c)) {
		c->proc.round_generation = 0;
		round_advance(co);
		return;
	}
	if (left_after_writing(co, c)) {
		take_over_image(co, c);
		return;
	}
	snprintf(what, sizeof(what), "the process disconnected while %s",
		 proc_state_name(c->proc.state));
	round_fail_process(co, c, ECONNRESET, what);
	round_advance(co);
}

