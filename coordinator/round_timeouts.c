// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every phase of a checkpoint round is bounded, so that one stuck or
 * misbehaving participant cannot keep the others stopped (docs/protocol.md,
 * "Failures"):
 *
 *   suspend  all SUSPENDED within the phase timeout (--phase-timeout,
 *            CKPT_PHASE_TIMEOUT; 5 s by default) of DO_SUSPEND
 *   write    each WRITTEN within --write-timeout, and one on this host
 *            with a sign of progress (bytes written: /proc/PID/io wchar)
 *            at least every two phase timeouts
 *   sync     each SYNCED within --write-timeout of DO_RESUME
 *   commit   each DURABLE within --write-timeout of DO_COMMIT
 *   abort    after a failure, each that was told DO_ABORT answers within
 *            the phase timeout
 *
 * A participant that misses its phase's bound fails the round, which
 * sends DO_ABORT to everyone still stopped (they run again at once); the
 * command learns who stalled in which phase, and the stalled process is
 * dropped (its connection closed): a libckpt process that was merely slow
 * reconnects and is a member again from the next round on. A participant
 * the round waits for and that is found stopped (SIGSTOP, a debugger)
 * fails the round within a second, or within four while it had been
 * seen running (look_at_processes), and is told DO_ABORT too, so that
 * once continued it runs again instead of waiting for an order that
 * never comes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coordinator.h"

const char *round_phase_name(const struct round *r)
{
	if (r->committing)
		return "commit";
	if (r->failed)
		return "abort";
	if (!r->writing)
		return "suspend";
	return r->resumed ? "sync" : "write";
}

/* Bytes the process wrote so far (its image grows): /proc/PID/io wchar;
 * PROGRESS_UNKNOWN when it cannot be read (another host, a process that
 * is not dumpable, gone). */
uint64_t proc_written_bytes(struct coordinator *co, struct conn *c)
{
	char buf[1024], *p;

	if (!proc_on_this_host(c) ||
	    proc_file_read(co, c, PROC_FILE_IO, buf, sizeof(buf)) < 0)
		return PROGRESS_UNKNOWN;
	p = strstr(buf, "wchar:");
	return p ? strtoull(p + 6, NULL, 10) : PROGRESS_UNKNOWN;
}

/* Its resident memory (/proc/PID/statm), about what its image will
 * hold: the progress line's "time left" (json_replies.c). */
uint64_t proc_resident_bytes(const struct conn *c)
{
	char buf[256];
	unsigned long long size, resident;

	if (!proc_on_this_host(c) ||
	    read_proc_text(c->proc.local_pid, "statm", buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return 0;
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

void round_timeouts_on_answer(struct conn *c)
{
	c->proc.progress_ms = now_ms();
	c->proc.running_ms = c->proc.progress_ms;
	c->proc.look_every_ms = 0;
}

/* Writing progress is looked at in the write phase only
 * (check_write_progress), where start_writing() read where each began. */
static bool in_write_phase(const struct round *r)
{
	return r->writing && !r->resumed && !r->failed;
}

void round_timeouts_start_phase(struct coordinator *co, int64_t len_ms)
{
	int64_t now = now_ms();

	co->round.phase_deadline = now + len_ms;
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (!round_in(co, c))
			continue;
		c->proc.progress_ms = now;
		c->proc.look_every_ms = 0;
		if (!in_write_phase(&co->round))
			c->proc.wchar = PROGRESS_UNKNOWN;
	}
}

/* Nobody may stay stopped on account of a participant that failed: one
 * still suspending reads DO_ABORT right after it suspends, one suspended,
 * writing or written resumes, one synced removes its new image. After
 * DO_COMMIT there is no way back. */
void round_abort_participant(struct coordinator *co, struct conn *c)
{
	switch (c->proc.state) {
	case PROC_SUSPENDING:
	case PROC_SUSPENDED:
	case PROC_WRITING:
	case PROC_WRITTEN:
	case PROC_SYNCED:
		if (!co->round.committing)
			conn_send(c, CKPT_MSG_DO_ABORT, NULL, 0);
		break;
	default:
		break;
	}
}

/* Fail it, resume it if it ever listens again, and drop it: it answers
 * nothing, so the next rounds must not wait for it. */
static void drop_stalled(struct coordinator *co, struct conn *c,
			 const char *what)
{
	char name[256];

	round_abort_participant(co, c);
	round_fail_process(co, c, ETIMEDOUT, what);
	coord_log("dropping process %s: it stalled in a checkpoint round",
		  proc_name(c, name, sizeof(name)));
	c->close_after_flush = true;
}

/* It owes the coordinator an answer in the running phase (the others
 * wait for the coordinator's next order). */
static bool owes_answer(struct coordinator *co, const struct conn *c)
{
	switch (c->proc.state) {
	case PROC_SUSPENDING:
	case PROC_ABORTING:
	case PROC_WRITING:
	case PROC_COMMITTING:
	case PROC_DISCARDING:
		return true;
	case PROC_WRITTEN:	/* an older libckpt syncs without DO_RESUME */
		return co->round.resumed ||
		       !(c->proc.hello.flags & CKPT_HELLO_F_RESUME_BARRIER);
	default:
		return false;
	}
}

static const char *awaited_answer(enum proc_state s)
{
	switch (s) {
	case PROC_SUSPENDING:
	case PROC_ABORTING:
		return "did not answer DO_SUSPEND";
	case PROC_WRITING:
		return "no WRITTEN";
	case PROC_WRITTEN:
		return "no SYNCED";
	case PROC_COMMITTING:
		return "no DURABLE";
	default:
		return "did not confirm DO_ABORT";
	}
}

static void time_out_phase(struct coordinator *co)
{
	struct round *r = &co->round;
	const char *phase = round_phase_name(r);
	bool short_phase = !strcmp(phase, "suspend") || !strcmp(phase, "abort");
	int64_t len = short_phase ? co->phase_timeout_ms : co->write_timeout_ms;

	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];
		char what[512], hint[320];

		if (!round_in(co, c) || !owes_answer(co, c) ||
		    c->close_after_flush)
			continue;
		snprintf(what, sizeof(what), "stalled in the %s phase: %s "
			 "within %.1f s (ckpt_coordinator %s)%s", phase,
			 awaited_answer(c->proc.state), len / 1000.0,
			 short_phase ? "--phase-timeout" : "--write-timeout",
			 proc_on_this_host(c) ?
			 stopped_by_tracer_hint(co, c->proc.local_pid, hint,
						sizeof(hint)) : "");
		drop_stalled(co, c, what);
	}
	/* the round failed: those still stopped were told DO_ABORT and
	 * get one phase timeout to confirm */
	if (!r->committing)
		round_timeouts_start_phase(co, co->phase_timeout_ms);
	else
		r->phase_deadline = now_ms() + co->write_timeout_ms;
}

/* How often stopped processes and writing progress are looked at. */
static int64_t check_interval(const struct coordinator *co)
{
	int64_t half = co->phase_timeout_ms / 2;

	return half < COORD_STOP_CHECK_MS ? (half > 50 ? half : 50)
					  : COORD_STOP_CHECK_MS;
}

/* The longest a process found running is left alone: a stopped one is
 * found this much later at most, a stuck writer this much after its
 * two phase timeouts. */
static int64_t longest_look_interval(const struct coordinator *co)
{
	int64_t most = co->phase_timeout_ms < COORD_STOP_CHECK_MAX_MS ?
		       co->phase_timeout_ms : COORD_STOP_CHECK_MAX_MS;

	return most > check_interval(co) ? most : check_interval(co);
}

/* Seen running since the last look (it answered, wrote bytes, or its
 * /proc/PID/stat said so) within its look interval: left alone this
 * time. The interval doubles at each look that finds the process running
 * and starts again at each answer, so a long write costs a few /proc
 * reads per process, not one a second (docs/performance.md, "Scale"). */
static bool seen_running(const struct coordinator *co, const struct conn *c,
			 int64_t now)
{
	int64_t every = c->proc.look_every_ms ? c->proc.look_every_ms
					       : check_interval(co);

	return c->proc.running_ms && now - c->proc.running_ms < every;
}

static void note_seen_running(const struct coordinator *co, struct conn *c,
			      int64_t now)
{
	int64_t every = c->proc.look_every_ms ? c->proc.look_every_ms
					       : check_interval(co);

	c->proc.running_ms = now;
	c->proc.look_every_ms = every * 2 < longest_look_interval(co) ?
				every * 2 : longest_look_interval(co);
}

enum write_progress { WROTE, WROTE_NOTHING, STALLED };

/* A participant writing its image on this host shows progress by the
 * bytes it writes; one that shows none for two phase timeouts is stuck,
 * and the others, stopped until every image is written, must not wait
 * for it until --write-timeout. Where the bytes cannot be seen (another
 * host), only --write-timeout bounds the write. */
static enum write_progress check_write_progress(struct coordinator *co,
						struct conn *c, int64_t now)
{
	int64_t stall = co->phase_timeout_ms * COORD_STALL_FACTOR;
	uint64_t w = proc_written_bytes(co, c);
	char what[256];

	if (w == PROGRESS_UNKNOWN || c->proc.wchar == PROGRESS_UNKNOWN)
		return WROTE_NOTHING;
	if (w != c->proc.wchar) {
		c->proc.wchar = w;
		c->proc.progress_ms = now;
		return WROTE;
	}
	if (now - c->proc.progress_ms < stall)
		return WROTE_NOTHING;
	snprintf(what, sizeof(what), "stalled in the write phase: no "
		 "WRITTEN and no byte written for %.1f s "
		 "(ckpt_coordinator --phase-timeout x %d)",
		 stall / 1000.0, COORD_STALL_FACTOR);
	drop_stalled(co, c, what);
	return STALLED;
}

/* A process stopped by SIGSTOP cannot answer: say so within a few
 * seconds instead of at the phase's timeout. A traced one is left to the
 * phase timeout: its debugger may be taking this very checkpoint,
 * resuming the manager thread first (dist/gdb/ckpt-gdb.py), or stop it
 * briefly for each signal it passes on. Only processes on this host can
 * be looked at. */
static bool process_is_stopped(struct coordinator *co, struct conn *c)
{
	char state;

	if (!proc_on_this_host(c))
		return false;
	state = round_process_state(co, c);
	return (state == 'T' || state == 't') &&
	       local_process_tracer(c->proc.local_pid) <= 0;
}

/* Those the round waits for (one waiting for the coordinator's next
 * order is looked at once it owes an answer again): a writer's bytes,
 * else whether it is stopped. */
static void look_at_processes(struct coordinator *co, int64_t now)
{
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];
		enum write_progress w = WROTE_NOTHING;

		if (!round_in(co, c) || !owes_answer(co, c) ||
		    c->proc.state == PROC_ABORTING || c->close_after_flush ||
		    seen_running(co, c, now))
			continue;
		if (in_write_phase(&co->round) &&
		    c->proc.state == PROC_WRITING)
			w = check_write_progress(co, c, now);
		if (w == STALLED)
			continue;
		if (w == WROTE || !process_is_stopped(co, c)) {
			note_seen_running(co, c, now);
			continue;
		}
		/* once continued it must run again, not wait for us */
		round_abort_participant(co, c);
		round_fail_process(co, c, EAGAIN, "is stopped (SIGSTOP or a "
				   "debugger); continue it (kill -CONT) and "
				   "checkpoint again");
	}
}

void round_check_timeouts(struct coordinator *co)
{
	struct round *r = &co->round;
	int64_t now = now_ms();

	if (!r->active)
		return;
	if (r->next_member_check_ms && now >= r->next_member_check_ms)
		r->next_member_check_ms = 0; /* round_advance looks again */
	if (now >= r->next_stop_check_ms) {
		look_at_processes(co, now);
		r->next_stop_check_ms = now + check_interval(co);
	}
	if (now >= r->phase_deadline)
		time_out_phase(co);
	round_advance(co);
}

int64_t round_next_deadline(struct coordinator *co)
{
	struct round *r = &co->round;
	int64_t d;

	if (!r->active)
		return 0;
	d = r->phase_deadline;
	if (r->next_stop_check_ms < d)
		d = r->next_stop_check_ms;
	if (r->next_member_check_ms && r->next_member_check_ms < d)
		d = r->next_member_check_ms;
	return d;
}
