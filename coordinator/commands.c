// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Commands from ckpt_command: CHECKPOINT (see checkpoint_round.c), STATUS,
 * LIST, INTERVAL, KILL and QUIT. Replies are text, printed as they are.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "coordinator.h"
#include "../protocol/sanitize.h"

static void status_last_round(struct coordinator *co, struct buf *t)
{
	int64_t now = now_ms();

	if (!co->last_ok.generation)
		buf_printf(t, "last checkpoint: none\n");
	else
		buf_printf(t, "last checkpoint: generation %llu, %d "
			   "process(es), %.0f ms (coordinator busy %.1f ms), "
			   "%lld s ago\n",
			   (unsigned long long)co->last_ok.generation,
			   co->last_ok.nprocs, co->last_ok.ms,
			   co->last_ok.busy_ms,
			   (long long)((now - co->last_ok.end_ms) / 1000));
	if (co->last.generation && !co->last.ok)
		buf_printf(t, "last round: generation %llu FAILED, %lld s "
			   "ago\n", (unsigned long long)co->last.generation,
			   (long long)((now - co->last.end_ms) / 1000));
}

static void status_round(struct coordinator *co, struct buf *t)
{
	struct round *r = &co->round;

	if (!r->active) {
		buf_printf(t, "round: idle\n");
		return;
	}
	buf_printf(t, "round: running, generation %llu, %s phase, %d "
		   "process(es), %lld ms so far%s\n",
		   (unsigned long long)r->generation,
		   r->writing ? "write" : "suspend", r->nprocs,
		   (long long)(now_ms() - r->start_ms),
		   r->failed ? ", failing" : "");
}

/* Where a process is, in words (STATUS): the state names are
 * proc_state_name()'s, kept for the JSON and the log. */
static const char *proc_state_meaning(enum proc_state s)
{
	static const char *const meanings[] = {
		[PROC_IDLE] = "running",
		[PROC_SUSPENDING] = "being stopped for a checkpoint",
		[PROC_SUSPENDED] = "stopped for a checkpoint",
		[PROC_WRITING] = "writing its image",
		[PROC_WRITTEN] = "image written, waiting for the others",
		[PROC_SYNCED] = "image on disk, waiting for the others",
		[PROC_COMMITTING] = "putting its new image in place",
		[PROC_DURABLE] = "checkpointed",
		[PROC_FAILED] = "its checkpoint failed",
		[PROC_ABORTING] = "being told to resume without a checkpoint",
		[PROC_ABORTED] = "resumed without a checkpoint",
		[PROC_DISCARDING] = "removing its unfinished image",
	};

	return s < sizeof(meanings) / sizeof(meanings[0]) && meanings[s] ?
	       meanings[s] : "in an unknown state";
}

static void reply_status(struct coordinator *co, struct conn *c)
{
	struct buf t = { 0 };

	buf_printf(&t, "coordinator: %s (pid %d, computation %016llx)\n",
		   co->addr, (int)getpid(),
		   (unsigned long long)co->computation_id);
	buf_printf(&t, "processes: %d\n", count_processes(co));
	if (co->interval_s)
		buf_printf(&t, "interval: %u s\n", co->interval_s);
	else
		buf_printf(&t, "interval: off\n");
	status_last_round(co, &t);
	status_round(co, &t);
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *p = co->conns[i];
		char name[256];

		if (p->kind != CONN_PROCESS || p->eof)
			continue;
		buf_printf(&t, "process %s: %s; %s\n",
			   proc_name(p, name, sizeof(name)),
			   proc_state_meaning(p->proc.state),
			   p->proc.hello.flags & CKPT_HELLO_F_ACCEL ?
			   "finds its memory with the ckpt_accel kernel module"
			   : "finds its memory through /proc (no ckpt_accel "
			   "kernel module)");
	}
	conn_reply(c, 0, buf_str(&t));
	buf_free(&t);
}

/* A name a peer gave, fit for a terminal. */
static const char *shown(const char *name, char *tmp, size_t len)
{
	snprintf(tmp, len, "%s", name);
	ckpt_sanitize_in_place(tmp, false);
	return tmp;
}

static void reply_list(struct coordinator *co, struct conn *c)
{
	struct buf t = { 0 };

	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *p = co->conns[i];
		struct ckpt_msg_hello *h = &p->proc.hello;
		char host[64], prog[64], id[64];

		if (p->kind != CONN_PROCESS || p->eof)
			continue;
		buf_printf(&t, "vpid=%d pid=%d host=%s program=%s id=%s "
			   "restarted=%s\n", h->vpid, h->real_pid,
			   shown(h->hostname, host, sizeof(host)),
			   shown(h->program, prog, sizeof(prog)),
			   shown(h->unique_id, id, sizeof(id)),
			   h->flags & CKPT_HELLO_F_RESTARTED ? "yes" : "no");
	}
	conn_reply(c, 0, buf_str(&t));
	buf_free(&t);
}

static void set_interval(struct coordinator *co, struct conn *c,
			 uint32_t seconds)
{
	char text[64];

	co->interval_s = seconds;
	co->next_interval_ms = seconds ? now_ms() + (int64_t)seconds * 1000
				       : 0;
	coord_log("interval set to %u s by %s", seconds, c->peer);
	if (seconds)
		snprintf(text, sizeof(text), "interval: %u s\n", seconds);
	else
		snprintf(text, sizeof(text), "interval: off\n");
	conn_reply(c, 0, text);
}

static int alive_killed(struct coordinator *co)
{
	int n = 0;

	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *p = co->conns[i];

		if (p->kind == CONN_PROCESS && !p->eof && p->proc.kill_sent)
			n++;
	}
	return n;
}

/* `sig` to pid and, depth first, to every process below it: a child
 * that has not joined yet (between fork and its HELLO, or exec'ing) is
 * part of the computation too, and left running it would see its
 * parent die and act on it (write into a pipe nobody reads any more).
 * SIGKILL: the children first, then pid (post-order). Killing a parent
 * first lets the kernel, when it exits, send SIGHUP and SIGCONT to a
 * child's process group it leaves orphaned with stopped members (timeout,
 * a job of a shell with job control, a daemon's setpgid): SIGCONT undoes
 * the SIGSTOP pass and the group runs its SIGHUP handlers (apache
 * restarted, timeout sent SIGTERM to its command) before its own SIGKILL.
 * Once a process has SIGKILL pending no SIGCONT runs it again. Any other
 * signal: to pid, then its children listed after it, so a child forked
 * meanwhile is not missed. Each process SIGKILLed is noted: the kill's
 * reply waits until it is gone (a child that is no member holds what it
 * inherited, a listening socket, until it is). */
static void signal_tree(struct coordinator *co, pid_t pid, int sig,
			int depth)
{
	bool post_order = sig == SIGKILL;
	pid_t kids[256];
	int n = 0;

	if (!post_order)
		kill(pid, sig);
	if (depth < COORD_KILL_TREE_DEPTH)
		n = local_children(pid, kids, 256);
	for (int i = 0; i < n; i++)
		signal_tree(co, kids[i], sig, depth + 1);
	if (post_order && kill(pid, sig) == 0 &&
	    co->nkilled < COORD_KILLED_MAX)
		co->killed[co->nkilled++] = pid;
}

/* The processes on this host and their descendants are stopped first,
 * all of them, then killed: none may see another die and act on it (a
 * compiler driver removes its temporary files when its cc1 dies, files
 * the images of the last checkpoint still need). Others get DO_KILL. */
static void stop_local_processes(struct coordinator *co, int sig)
{
	/* only where the kernel vouched for the pid (peer_pid.c); the
	 * others get DO_KILL only */
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *p = co->conns[i];

		if (p->kind == CONN_PROCESS && !p->eof &&
		    !p->proc.kill_sent && proc_on_this_host(p))
			signal_tree(co, p->proc.local_pid, sig, 0);
	}
}

/* How many of the processes SIGKILLed are still running (not gone, not
 * a zombie: a zombie holds no file any more); the list keeps those. */
static int killed_still_running(struct coordinator *co)
{
	int kept = 0;

	for (int i = 0; i < co->nkilled; i++)
		if (!local_process_gone(co->killed[i]))
			co->killed[kept++] = co->killed[i];
	co->nkilled = kept;
	return kept;
}

static void start_kill(struct coordinator *co, struct conn *c,
		       enum pending_cmd pending)
{
	int n = 0;

	c->pending = pending;
	co->nkilled = 0;
	stop_local_processes(co, SIGSTOP);
	stop_local_processes(co, SIGKILL);
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *p = co->conns[i];

		if (p->kind != CONN_PROCESS || p->eof || p->proc.kill_sent)
			continue;
		conn_send(p, CKPT_MSG_DO_KILL, NULL, 0);
		p->proc.kill_sent = true;
		n++;
	}
	coord_log("%s: sent DO_KILL to %d process(es)",
		  pending == PENDING_QUIT ? "quit" : "kill", n);
	co->kill_deadline = now_ms() + COORD_KILL_TIMEOUT_MS;
	kill_check(co);
}

static void kill_report(struct coordinator *co, struct buf *t)
{
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *p = co->conns[i];
		char name[256];

		if (p->kind != CONN_PROCESS || p->eof || !p->proc.kill_sent)
			continue;
		buf_printf(t, "%s: still connected 10 s after DO_KILL\n",
			   proc_name(p, name, sizeof(name)));
	}
	for (int i = 0; i < co->nkilled; i++)
		buf_printf(t, "process %d: still running 10 s after SIGKILL "
			   "(state %c)\n", (int)co->killed[i],
			   local_process_state(co->killed[i]));
}

/* Reply to KILL/QUIT once every killed process has gone, or at the
 * deadline with the names of those that did not. */
void kill_check(struct coordinator *co)
{
	int running = co->kill_deadline ? killed_still_running(co) : 0;
	int alive = alive_killed(co) + running;
	struct buf t = { 0 };
	int status = 0;

	co->killed_check_ms = running ? now_ms() + COORD_KILLED_CHECK_MS : 0;
	if (!co->kill_deadline || (alive && now_ms() < co->kill_deadline))
		return;
	co->kill_deadline = 0;
	co->killed_check_ms = 0;
	if (alive) {
		kill_report(co, &t);
		status = ETIMEDOUT;
	}
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (c->pending != PENDING_KILL && c->pending != PENDING_QUIT)
			continue;
		if (c->pending == PENDING_QUIT)
			co->quit = true;
		if (c->restore_snapshot && !status) {
			c->pending = PENDING_NONE;
			snapshot_images(co, c, c->restore_snapshot);
			c->restore_snapshot = 0;
			continue;
		}
		c->restore_snapshot = 0;
		conn_reply(c, status, status ? buf_str(&t) :
			   c->pending == PENDING_QUIT ?
			   "all processes gone; coordinator exiting\n" :
			   "all processes gone\n");
		c->pending = PENDING_NONE;
	}
	buf_free(&t);
}

/* RESTORE_PREPARE: the computation killed, then the snapshot's images
 * (a template's "template PID IMAGE"), one request for what KILL and
 * SNAPSHOT_IMAGES take two for. */
static void restore_prepare(struct coordinator *co, struct conn *c,
			    uint64_t id)
{
	if (!snapshot_known(co, id)) {
		snapshot_images(co, c, id);	/* its "no snapshot" */
		return;
	}
	c->restore_snapshot = id;
	start_kill(co, c, PENDING_KILL);
}

void command_handle(struct coordinator *co, struct conn *c,
		    const struct ckpt_msg_cmd *cmd)
{
	char text[128];

	if (c->pending != PENDING_NONE) {
		conn_reply(c, EBUSY, "this connection already waits for a "
			   "command; send one at a time\n");
		return;
	}
	c->reply_json = cmd->arg & CKPT_CMD_F_JSON;
	switch (cmd->cmd) {
	case CKPT_CMD_CHECKPOINT:
		round_request(co, c, cmd->arg & (CKPT_CHECKPOINT_F_COMPRESS |
						 CKPT_CHECKPOINT_F_INCREMENTAL |
						 CKPT_CHECKPOINT_F_FORKED));
		break;
	case CKPT_CMD_STATUS:
		if (c->reply_json)
			json_reply_status(co, c);
		else
			reply_status(co, c);
		break;
	case CKPT_CMD_LIST:
		if (c->reply_json)
			json_reply_list(co, c);
		else
			reply_list(co, c);
		break;
	case CKPT_CMD_INTERVAL:
		set_interval(co, c, cmd->arg);
		break;
	case CKPT_CMD_KILL:
		start_kill(co, c, PENDING_KILL);
		break;
	case CKPT_CMD_QUIT:
		start_kill(co, c, PENDING_QUIT);
		break;
	case CKPT_CMD_SNAPSHOT:
		snapshot_request(co, c);
		break;
	case CKPT_CMD_SNAPSHOTS:
		snapshot_list(co, c);
		break;
	case CKPT_CMD_SNAPSHOT_IMAGES:
		snapshot_images(co, c, cmd->arg);
		break;
	case CKPT_CMD_DROP:
		snapshot_drop(co, c, cmd->arg);
		break;
	case CKPT_CMD_RESTORE_PREPARE:
		restore_prepare(co, c, cmd->arg);
		break;
	default:
		snprintf(text, sizeof(text), "unknown command %u (this "
			 "coordinator speaks protocol %d)\n", cmd->cmd,
			 CKPT_PROTOCOL_VERSION);
		conn_reply(c, EINVAL, text);
	}
}
