/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Start-up of libckpt in a launched process, and the manager thread that
 * talks to the coordinator and runs the checkpoint sequence
 * (checkpoint.c) on its orders.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/accel.h"
#include "ckpt/coord_client.h"
#include "ckpt/proc_stat.h"
#include "image_chain.h"
#include "image_writer.h"
#include "internal.h"

struct ckpt_state ckpt = { .coord_fd = -1 };

#define HELLO_TIMEOUT_MS 5000
#define CONNECT_TIMEOUT_MS 5000
#define IMAGE_SETTLE_MAX_MS 120000

union manager_msg {
	struct ckpt_msg_welcome welcome;
	struct ckpt_msg_do_checkpoint do_ckpt;
	char raw[8192];
};

static void sanitize_name(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < len; i++) {
		char c = src[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '.' || c == '-';

		dst[i] = ok ? c : '_';
	}
	dst[i] = 0;
	if (!i)
		ckpt_fmt(dst, len, "program");
}

static uint32_t host_hash(const char *host)
{
	uint32_t h = 2166136261u;

	for (; *host; host++)
		h = (h ^ (unsigned char)*host) * 16777619u;
	return h;
}

/* The digits of v in `base`, at least `min` of them (zeros before),
 * written to end in the characters before `end`; returns where they
 * start. */
static char *digits_before(char *end, unsigned long v, unsigned base,
			   int min)
{
	int n = 0;

	do {
		*--end = "0123456789abcdef"[v % base];
		v /= base;
		n++;
	} while (v || n < min);
	return end;
}

/* "<host hash, 8 hex>-<vpid>-<start second, hex>", as "%08x-%d-%lx"
 * but without printf, whose code is page faults in every forked child. */
static void format_unique_id(char *buf, size_t len, uint32_t host,
			     pid_t vpid, unsigned long now)
{
	char tmp[64], *end = tmp + sizeof(tmp), *p;
	size_t n;

	p = digits_before(end, now, 16, 1);
	*--p = '-';
	p = digits_before(p, (unsigned long)(vpid < 0 ? 0 : vpid), 10, 1);
	*--p = '-';
	p = digits_before(p, host, 16, 8);
	n = (size_t)(end - p) < len ? (size_t)(end - p) : len - 1;
	memcpy(buf, p, n);
	buf[n] = 0;
}

/* A name stable for the life of the process (and across restarts). */
static void make_unique_id(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	format_unique_id(ckpt.unique_id, sizeof(ckpt.unique_id),
			 host_hash(ckpt.hostname), ckpt.vpid,
			 (unsigned long)now.tv_sec);
}

/* CKPT_HOST: the host name of the process that exec'd this one. */
static char inherited_host[64];

/* The host the process runs on, as its HELLO reports it: read again
 * after a restart, which may be on another host (docs/multi-host.md).
 * A process in a UTS namespace of its own (bwrap --hostname) keeps the
 * host name of the process that exec'd it: its own names no host, and
 * the coordinator would take it for a process of another one. */
static void read_hostname(void)
{
	struct utsname u;

	if (inherited_host[0] && namespaces_own_uts())
		ckpt_fmt(ckpt.hostname, sizeof(ckpt.hostname), "%s",
			 inherited_host);
	else if (uname(&u) == 0)
		ckpt_fmt(ckpt.hostname, sizeof(ckpt.hostname), "%s",
			 u.nodename);
}

static void make_identity(void)
{
	read_hostname();
	sanitize_name(ckpt.program, sizeof(ckpt.program),
		      program_invocation_short_name);
	make_unique_id();
}

/* A NUL-terminated copy of src, cut to fit. */
static void copy_name(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = 0;
}

static void read_settings(void)
{
	const char *dir = getenv("CKPT_DIR"), *coord = getenv("CKPT_COORD");

	ckpt_signal_choose();
	if (dir && dir[0])
		ckpt_fmt(ckpt.ckpt_dir, sizeof(ckpt.ckpt_dir), "%s", dir);
	else if (!getcwd(ckpt.ckpt_dir, sizeof(ckpt.ckpt_dir)))
		strcpy(ckpt.ckpt_dir, ".");
	if (ckpt_coord_resolve_addr(coord, ckpt.coord_addr,
				    sizeof(ckpt.coord_addr)) < 0)
		ckpt.coord_addr[0] = 0;
	saved_files_read_settings();
	ckpt.compress = getenv("CKPT_COMPRESS") &&
			!strcmp(getenv("CKPT_COMPRESS"), "1");
	ckpt.incremental = getenv("CKPT_INCREMENTAL") &&
			   !strcmp(getenv("CKPT_INCREMENTAL"), "1");
	ckpt.forked = getenv("CKPT_FORKED") &&
		      !strcmp(getenv("CKPT_FORKED"), "1");
}

static int send_result(uint16_t type, uint64_t gen, int error,
		       const char *path, const char *message)
{
	struct ckpt_msg_result res;

	memset(&res, 0, sizeof(res));
	res.generation = gen;
	res.error = error;
	if (path)
		ckpt_fmt(res.path, sizeof(res.path), "%s", path);
	if (message && message[0]) {
		ckpt_fmt(res.message, sizeof(res.message), "%s", message);
		return ckpt_msg_send(ckpt.coord_fd, type, &res, sizeof(res));
	}
	/* no message: the path's end is the payload's (a shorter payload
	 * reads as zero-filled, docs/protocol.md): about 100 bytes to copy
	 * instead of 4.6 KiB, four times per process and round */
	return ckpt_msg_send(ckpt.coord_fd, type, &res,
			     offsetof(struct ckpt_msg_result, path) +
			     strlen(res.path) + 1);
}

/* SUSPENDED, with the process's children to a coordinator that takes
 * them (it would read them from /proc otherwise: one directory and one
 * file per thread, for every process of the round, all on its time).
 * Listed now that every thread is stopped: none can fork until the
 * round lets it run again. */
static int send_suspended(uint64_t gen)
{
	static struct {
		struct ckpt_msg_result res;
		pid_t pids[CKPT_SUSPENDED_MAX_CHILDREN]; /* int32_t */
	} msg;
	int n = -1;

	_Static_assert(sizeof(pid_t) == sizeof(int32_t), "pid_t is int32_t");
	if (ckpt.coord_flags & CKPT_WELCOME_F_CHILDREN)
		n = process_list_children(msg.pids,
					  CKPT_SUSPENDED_MAX_CHILDREN);
	if (n < 0)
		return send_result(CKPT_MSG_SUSPENDED, gen, 0, NULL, NULL);
	memset(&msg.res, 0, sizeof(msg.res));
	msg.res.generation = gen;
	msg.res.flags = CKPT_RESULT_F_CHILDREN;
	return ckpt_msg_send(ckpt.coord_fd, CKPT_MSG_SUSPENDED, &msg,
			     sizeof(msg.res) + n * sizeof(msg.pids[0]));
}

static void handle_write_image(const struct ckpt_msg_do_checkpoint *m,
			       int early);

static size_t unrestored_sent;	/* bytes of the text sent this round */

/* What a restart of this checkpoint will not restore, for ckpt_command
 * (a coordinator that does not take it gets nothing). Sent again, whole,
 * when the write phase added lines (tcp_refill.c): the coordinator keeps
 * the last one until the image is durable. */
static void send_unrestored(uint64_t gen)
{
	static char msg[sizeof(struct ckpt_msg_unrestored) + (16 << 10)];
	struct ckpt_msg_unrestored *u = (void *)msg;
	const char *text = unrestored_text();
	size_t n = strlen(text) + 1;

	unrestored_sent = strlen(text);
	if (!text[0] || !(ckpt.coord_flags & CKPT_WELCOME_F_UNRESTORED))
		return;
	if (n > sizeof(msg) - sizeof(*u))
		n = sizeof(msg) - sizeof(*u);
	memset(u, 0, sizeof(*u));
	u->generation = gen;
	u->text_len = n;
	memcpy(msg + sizeof(*u), text, n);
	msg[sizeof(*u) + n - 1] = 0;
	ckpt_msg_send(ckpt.coord_fd, CKPT_MSG_UNRESTORED, msg,
		      sizeof(*u) + n);
}

/* A coordinator that just saw its last process go exits after a short
 * linger; a process that execs or restarts at that moment may find it
 * gone, or going: start one then (ckpt_coord_connect_or_spawn). */
static int connect_retrying(void)
{
	int fd = ckpt_coord_connect(ckpt.coord_addr, CONNECT_TIMEOUT_MS);

	if (fd >= 0)
		return fd;
	return ckpt_coord_connect_or_spawn(ckpt.coord_addr, CONNECT_TIMEOUT_MS);
}

/* The coordinator's phase bounds, appended to WELCOME (an older one sent
 * a shorter one: 0, not said). */
static void note_phase_bounds(const struct ckpt_msg_welcome *w, uint32_t len)
{
	int said = len >= sizeof(*w);

	ckpt.coord_phase_ms = said ? w->phase_timeout_ms : 0;
	ckpt.coord_write_ms = said ? w->write_timeout_ms : 0;
}

/* How long the threads may wait stopped, or an image wait uncommitted, for
 * the coordinator's next order: a little more than the coordinator's own
 * bound for the phase (docs/protocol.md, "Failures"). `after_suspend`:
 * the order after SUSPENDED (the suspend phase, the wait for forked
 * members, the abort); else the one after WRITTEN or SYNCED. */
static int order_wait_ms(int after_suspend, int old_default_ms)
{
	uint32_t p = ckpt.coord_phase_ms, w = ckpt.coord_write_ms;

	if (!p || !w)
		return old_default_ms;
	if (after_suspend)
		return 2 * p + CKPT_JOIN_WAIT_MS + CKPT_ORDER_SLACK_MS;
	return w + p + CKPT_ORDER_SLACK_MS;
}

/* A DO_SUSPEND that came while this process waited for another order
 * (its round failed elsewhere, or it was stopped, and a new round began):
 * the manager thread handles it next instead of losing it. */
static struct ckpt_msg_do_checkpoint next_suspend;
static int have_next_suspend;

static void keep_next_suspend(const struct ckpt_msg_do_checkpoint *m)
{
	next_suspend = *m;
	have_next_suspend = 1;
}

/* Connect and send HELLO: from here on the coordinator knows of this
 * process (the HELLO waits in its socket). Returns the descriptor, whose
 * WELCOME is still to be read (read_welcome). */
static int send_hello(uint32_t flags)
{
	struct ckpt_msg_hello hello;
	int fd, r;

	if (!ckpt.coord_addr[0])
		return -EINVAL;
	fd = connect_retrying();
	if (fd < 0)
		return fd;
	fd = ckpt_move_fd_high(fd);
	memset(&hello, 0, sizeof(hello));
	hello.real_pid = ckpt_real_getpid();
	hello.vpid = ckpt.vpid;
	hello.vppid = ckpt.vppid;
	hello.flags = flags | CKPT_HELLO_F_RESUME_BARRIER |
		      (ckpt_accel_available() ? CKPT_HELLO_F_ACCEL : 0);
	hello.generation = ckpt.generation;
	hello.computation_id = ckpt.computation_id;
	if (flags & CKPT_HELLO_F_RESTARTED)
		hello.restart_group =
			handover_restart_group(&hello.restart_group_size);
	if (hello.restart_group)
		hello.flags |= CKPT_HELLO_F_RESTART_GROUP;
	copy_name(hello.program, sizeof(hello.program), ckpt.program);
	copy_name(hello.unique_id, sizeof(hello.unique_id), ckpt.unique_id);
	copy_name(hello.hostname, sizeof(hello.hostname), ckpt.hostname);
	/* TCP: connect_retrying() authenticated both ends already */
	r = ckpt_msg_send(fd, CKPT_MSG_HELLO, &hello, sizeof(hello));
	if (r < 0) {
		ckpt_mark_own_fd(fd, 0);
		close(fd);
		return r;
	}
	return fd;
}

/* The coordinator's answer to the HELLO sent on fd: WELCOME, whose
 * settings are taken, or an error. */
static int read_welcome(int fd)
{
	union manager_msg msg;
	uint32_t len;
	int r = ckpt_msg_recv(fd, &msg, sizeof(msg), &len, HELLO_TIMEOUT_MS);

	if (r >= 0 && r != CKPT_MSG_WELCOME)
		r = -EPROTO;
	if (r < 0)
		return r;
	ckpt.computation_id = msg.welcome.computation_id;
	ckpt.coord_flags = msg.welcome.flags;
	note_phase_bounds(&msg.welcome, len);
	return 0;
}

/* Connect and introduce this process; the coordinator answers WELCOME. */
static int join_coordinator(uint32_t flags)
{
	int fd = send_hello(flags), r;

	if (fd < 0)
		return fd;
	r = read_welcome(fd);
	if (r < 0) {
		ckpt_mark_own_fd(fd, 0);
		close(fd);
		return r;
	}
	ckpt.coord_fd = fd;
	return 0;
}

/* The coordinator went away in the middle of the introduction (it was
 * exiting): worth one more try, which starts a new one. */
static int coordinator_was_exiting(int r)
{
	return r == -EPIPE || r == -ECONNRESET || r == -ECONNREFUSED ||
	       r == -ENOENT;
}

static void pause_before_second_try(void)
{
	struct timespec pause = { 0, 200 * 1000 * 1000 };

	nanosleep(&pause, NULL);
}

/* HELLO, tried once more when the coordinator was exiting: the
 * connection, its WELCOME unread, or -errno. */
static int send_hello_retrying(uint32_t flags)
{
	int r = send_hello(flags);

	if (coordinator_was_exiting(r)) {
		pause_before_second_try();
		r = send_hello(flags);
	}
	return r;
}

/* Held while the connection is closed, or shut down by manager_leave
 * from another thread (not a number the program reuses meanwhile). */
static int coord_fd_lock;

static void lock_coord_fd(void)
{
	while (__atomic_exchange_n(&coord_fd_lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void unlock_coord_fd(void)
{
	__atomic_store_n(&coord_fd_lock, 0, __ATOMIC_RELEASE);
}

static void leave_coordinator(void)
{
	lock_coord_fd();
	if (ckpt.coord_fd >= 0) {
		ckpt_mark_own_fd(ckpt.coord_fd, 0);
		close(ckpt.coord_fd);
	}
	ckpt.coord_fd = -1;
	unlock_coord_fd();
}

/* From DO_WRITE until DURABLE or FAILED is sent. The application runs
 * again while the image is made durable; an exec or exit in that window
 * would end the manager thread and lose the round, so both wait. */
static int image_in_flight;

static void image_settled(void)
{
	__atomic_store_n(&image_in_flight, 0, __ATOMIC_RELEASE);
	syscall(SYS_futex, &image_in_flight, FUTEX_WAKE_PRIVATE, INT_MAX,
		NULL, NULL, 0);
}

void manager_wait_image_settled(void)
{
	struct timespec slice = { 0, 100 * 1000 * 1000 };

	if (ckpt_real_getpid() != vpid_real_from_virt(ckpt.vpid))
		return; /* a vfork child: the image is its parent's */
	for (int i = 0; i < IMAGE_SETTLE_MAX_MS / 100 &&
			__atomic_load_n(&image_in_flight, __ATOMIC_ACQUIRE);
	     i++)
		syscall(SYS_futex, &image_in_flight, FUTEX_WAIT_PRIVATE, 1,
			&slice, NULL, 0);
}

__attribute__((destructor)) static void settle_before_exit(void)
{
	manager_wait_image_settled();
}

static void handle_write(const struct ckpt_msg_do_checkpoint *m, int early)
{
	__atomic_store_n(&image_in_flight, 1, __ATOMIC_RELEASE);
	handle_write_image(m, early);
	template_reap_helper();	/* a failed round's: not in the stall */
	image_settled();
}

/* Wait for the coordinator's order about the new image at tmp: 1 when it
 * is `want`; otherwise the image is removed, a DO_ABORT answered, and 0.
 * `stopped`: the threads wait for the order and are resumed here when it
 * is not the one wanted. */
static int await_order(int want, uint64_t generation, const char *tmp,
		       int stopped, int wait_ms)
{
	union manager_msg msg;
	uint32_t len;
	int r = ckpt_msg_recv(ckpt.coord_fd, &msg, sizeof(msg), &len, wait_ms);

	if (r == want)
		return 1;
	forked_copy_cancel();	/* before its image is removed */
	unlink(tmp);
	if (r == CKPT_MSG_DO_KILL)
		kill(ckpt_real_getpid(), SIGKILL);
	if (stopped)
		threads_resume_all();
	if (r == CKPT_MSG_DO_ABORT)
		send_result(CKPT_MSG_FAILED, generation, ECANCELED, NULL,
			    "image discarded: the checkpoint failed elsewhere");
	if (r == CKPT_MSG_DO_SUSPEND) {
		keep_next_suspend(&msg.do_ckpt);
		send_result(CKPT_MSG_FAILED, generation, ECANCELED, NULL,
			    "image discarded: a new checkpoint began");
	} else if (r < 0) {
		ckpt_log("checkpoint %llu: no word from the coordinator after "
			 "the image was %s (%s); it is discarded",
			 (unsigned long long)generation,
			 stopped ? "written" : "synced", strerror(-r));
		if (r != -ETIMEDOUT)
			leave_coordinator();
		else
			send_result(CKPT_MSG_FAILED, generation, ETIMEDOUT,
				    NULL, "no order from the coordinator in "
				    "time; the process runs on, its image is "
				    "discarded");
	} else if (r != CKPT_MSG_DO_ABORT) {
		ckpt_log("checkpoint %llu: unexpected message %d from the "
			 "coordinator; the image is discarded",
			 (unsigned long long)generation, r);
		send_result(CKPT_MSG_FAILED, generation, EPROTO, NULL,
			    "unexpected message from the coordinator while "
			    "waiting for its order; image discarded");
	}
	return 0;
}

/* A template snapshot is done: "template:PID:IMAGE". The helper that
 * forked the template has exited first: until then the template is its
 * child, in this process's tree, and a restore's kill of the tree (the
 * coordinator's, right after this answer) would kill it too. */
static void send_template_durable(uint64_t generation, pid_t template_pid,
				  const char *path)
{
	char text[4096];

	template_reap_helper();
	ckpt_fmt(text, sizeof(text), "%s%d:%s", CKPT_TEMPLATE_PATH_PREFIX,
		 (int)template_pid, path);
	send_result(CKPT_MSG_DURABLE, generation, 0, text, NULL);
}

/* early: the template is made right after the suspend (TEMPLATE_NOW in
 * DO_SUSPEND), the coordinator waiting for DURABLE or FAILED alone. */
static void handle_write_image(const struct ckpt_msg_do_checkpoint *m,
			       int early)
{
	char err[512] = "", path[4096], tmp[4096];
	const char *dir = m->ckpt_dir[0] ? m->ckpt_dir : ckpt.ckpt_dir;
	int compress = ckpt.compress ||
		       (m->flags & CKPT_CHECKPOINT_F_COMPRESS);
	/* a snapshot stands alone: never a link of the chain */
	int incremental = (ckpt.incremental ||
			   (m->flags & CKPT_CHECKPOINT_F_INCREMENTAL)) &&
			  !(m->flags & CKPT_CHECKPOINT_F_SNAPSHOT);
	/* an incremental image's chain state lives in the writer: its
	 * copy could not hand it back, so it is written in place */
	int forked = (ckpt.forked || (m->flags & CKPT_CHECKPOINT_F_FORKED)) &&
		     !incremental;
	/* a snapshot the coordinator lets be a template process. One
	 * restored by a fork (TEMPLATE_NOW: the round's only process) not
	 * of a process with children (zombies): a template's children are
	 * not the program's, an image's restart makes them again. A tree's
	 * templates only write their images when asked, for a restart. */
	pid_t template_pid = 0;
	pid_t *template = forked && (m->flags & CKPT_CHECKPOINT_F_SNAPSHOT) &&
			  (m->flags & CKPT_CHECKPOINT_F_TEMPLATE) &&
			  (!(m->flags & CKPT_CHECKPOINT_F_TEMPLATE_NOW) ||
			   process_has_children() == 0) ? &template_pid : NULL;
	int r;

	r = ordered_dir_check(m->ckpt_dir, err, sizeof(err));
	if (r < 0) {
		threads_resume_all();
		send_result(CKPT_MSG_FAILED, m->generation, -r, NULL, err);
		return;
	}
	template_note_coordinator((pid_t)m->coordinator_pid);
	ckpt.round_members = m->members_on_host;	/* into the header */
	r = checkpoint_write(m->generation, compress, incremental, forked,
			     template, dir, path,
			     sizeof(path),
			     tmp, sizeof(tmp), err, sizeof(err));
	if (r == CKPT_RESTARTED) {
		/* the image this process came back from, where it was
		 * committed */
		ckpt_fmt(ckpt.image_path, sizeof(ckpt.image_path), "%s", path);
		manager_after_restart(m->generation);
		/* a later checkpoint's writer may have been killed */
		image_remove_leftovers(dir);
		return;
	}
	if (r < 0) {
		send_result(CKPT_MSG_FAILED, m->generation, -r, NULL, err);
		return;
	}
	if (early && !template_pid) {
		/* no template after all (no coordinator pid to watch): an
		 * image the coordinator does not expect now */
		forked_copy_cancel();
		unlink(tmp);
		threads_resume_all();
		send_result(CKPT_MSG_FAILED, m->generation, EOPNOTSUPP, NULL,
			    "the snapshot's template could not be made (is "
			    "the coordinator gone?); nothing was kept");
		return;
	}
	if (template_pid && (m->flags & CKPT_CHECKPOINT_F_TEMPLATE_NOW)) {
		threads_resume_all();
		send_template_durable(m->generation, template_pid, path);
		return;
	}
	/* Resume barrier: the threads stay stopped until every process of
	 * the checkpoint has written its memory, so nothing another process
	 * saves (memory shared with this one, a shared file offset) changes
	 * under it. The fsync then runs while the program does. */
	if (strlen(unrestored_text()) != unrestored_sent)
		send_unrestored(m->generation);
	send_result(CKPT_MSG_WRITTEN, m->generation, 0, tmp, NULL);
	if (!await_order(CKPT_MSG_DO_RESUME, m->generation, tmp, 1,
			 order_wait_ms(0, CKPT_SUSPENDED_IDLE_MS)))
		return;
	threads_resume_all();
	if (template_pid)
		r = 0;	/* nothing written: the template holds it */
	else if (forked)
		r = forked_copy_finish(order_wait_ms(0, CKPT_COMMIT_WAIT_MS),
				       err, sizeof(err));
	else
		r = image_sync(tmp, err, sizeof(err));
	if (r < 0) {
		send_result(CKPT_MSG_FAILED, m->generation, -r, NULL, err);
		return;
	}
	send_result(CKPT_MSG_SYNCED, m->generation, 0, tmp, NULL);
	/* Two-phase commit: the image replaces the previous one only once
	 * every process of the checkpoint has its image synced, so a
	 * checkpoint that fails anywhere leaves every previous image. */
	if (!await_order(CKPT_MSG_DO_COMMIT, m->generation, tmp, 0,
			 order_wait_ms(0, CKPT_COMMIT_WAIT_MS)))
		return;
	if (template_pid) {
		send_template_durable(m->generation, template_pid, path);
		return;
	}
	r = image_commit(tmp, path, err, sizeof(err));
	if (r < 0) {
		send_result(CKPT_MSG_FAILED, m->generation, -r, NULL, err);
		return;
	}
	if (!(m->flags & CKPT_CHECKPOINT_F_SNAPSHOT)) {
		ckpt.generation = m->generation;
		ckpt_fmt(ckpt.image_path, sizeof(ckpt.image_path), "%s",
			 path);
		chain_image_committed(path, m->generation);
	}
	send_result(CKPT_MSG_DURABLE, m->generation, 0, path, NULL);
	if (!(m->flags & CKPT_CHECKPOINT_F_SNAPSHOT))
		chain_image_answered(m->generation);
}

/* A snapshot of this process alone, which the coordinator lets make its
 * template at once: nothing else can join the round (no children). */
static int template_right_away(const struct ckpt_msg_do_checkpoint *m)
{
	uint32_t all = CKPT_CHECKPOINT_F_SNAPSHOT | CKPT_CHECKPOINT_F_FORKED |
		       CKPT_CHECKPOINT_F_TEMPLATE |
		       CKPT_CHECKPOINT_F_TEMPLATE_NOW;

	return (m->flags & all) == all && process_has_children() == 0;
}

/* While the threads are stopped, wait (bounded) for DO_WRITE or ABORT. A
 * newer DO_SUSPEND (this process was stopped, its round failed and a new
 * one began) resumes the threads and starts over with that round. */
static void handle_suspend(const struct ckpt_msg_do_checkpoint *first)
{
	struct ckpt_msg_do_checkpoint m = *first;
	char err[512];
	union manager_msg msg;
	uint32_t len;
	int wait_ms = order_wait_ms(1, CKPT_SUSPENDED_IDLE_MS);
	int r;

	for (;;) {
		err[0] = 0;
		memory_round_begins();	/* the program ran since the last */
		r = ordered_dir_check(m.ckpt_dir, err, sizeof(err));
		if (r == 0) /* the program's sections and hooks */
			r = hooks_round_begin(err, sizeof(err));
		if (r == 0)
			r = checkpoint_suspend(m.generation, m.ckpt_dir[0] ?
					       m.ckpt_dir : ckpt.ckpt_dir, err,
					       sizeof(err));
		if (r < 0) {
			fd_headroom_explain(r, err, sizeof(err));
			send_result(CKPT_MSG_FAILED, m.generation, -r, NULL, err);
			return;
		}
		/* what the program makes from now on is made after it */
		created_journal_epoch(m.generation);
		send_unrestored(m.generation);
		if (template_right_away(&m)) {
			handle_write(&m, 1);
			return;
		}
		send_suspended(m.generation);
		/* an older coordinator's DO_WRITE lacks the flags */
		memset(&msg.do_ckpt, 0, sizeof(msg.do_ckpt));
		r = ckpt_msg_recv(ckpt.coord_fd, &msg, sizeof(msg), &len,
				  wait_ms);
		if (r == CKPT_MSG_DO_WRITE) {
			handle_write(&msg.do_ckpt, 0);
			return;
		}
		threads_resume_all();
		if (r != CKPT_MSG_DO_SUSPEND)
			break;
		m = msg.do_ckpt;
	}
	if (r == CKPT_MSG_DO_KILL)
		kill(ckpt_real_getpid(), SIGKILL);
	if (r < 0 && r != -ETIMEDOUT) {
		leave_coordinator();
	} else if (r < 0) {
		ckpt_log("checkpoint %llu: no word from the coordinator for "
			 "%d ms while stopped; resuming",
			 (unsigned long long)m.generation, wait_ms);
		send_result(CKPT_MSG_FAILED, m.generation, ETIMEDOUT, NULL,
			    "no DO_WRITE or DO_ABORT from the coordinator in "
			    "time while stopped; the process runs on");
	}
}

/* One round, from DO_SUSPEND to its end, with room for libckpt's own
 * descriptors (fd_headroom.c). */
static void take_part_in_round(const struct ckpt_msg_do_checkpoint *m)
{
	fd_headroom_take();
	handle_suspend(m);
	fd_headroom_give_back();
	debugger_note(CKPT_DEBUGGER_ROUND_DONE, 0);
}

/* The manager thread's stack (and TLS, in the same mapping): a mapping
 * of our own, so its bounds are known without pthread_getattr_np, whose
 * malloc made the manager thread a malloc arena of its own (a 128 MiB
 * reservation and its page faults in every process: 0.2 ms of every
 * fork and exec here). A forked child makes its manager on the same
 * mapping: its copy is free there. glibc puts the thread descriptor and
 * static TLS at the top of a stack it is given. */
#define MANAGER_STACK_SIZE (256 * 1024)
#define MANAGER_STACK_GUARD 4096
static uint64_t manager_stack_lo, manager_stack_hi;

static int manager_stack(void **stack)
{
	void *m;

	if (!manager_stack_hi) {
		m = mmap(NULL, MANAGER_STACK_GUARD + MANAGER_STACK_SIZE,
			 PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
			 -1, 0);
		if (m == MAP_FAILED)
			return -errno;
		if (mprotect((char *)m + MANAGER_STACK_GUARD,
			     MANAGER_STACK_SIZE, PROT_READ | PROT_WRITE) < 0) {
			int e = errno;

			munmap(m, MANAGER_STACK_GUARD + MANAGER_STACK_SIZE);
			return -e;
		}
		manager_stack_lo = (uintptr_t)m;
		manager_stack_hi = (uintptr_t)m + MANAGER_STACK_GUARD +
				   MANAGER_STACK_SIZE;
	}
	*stack = (void *)(uintptr_t)(manager_stack_lo + MANAGER_STACK_GUARD);
	return 0;
}

int manager_stack_overlaps(uint64_t addr, uint64_t len)
{
	if (!manager_stack_hi)
		return 1; /* unknown: copy everything, stay correct */
	return addr < manager_stack_hi && addr + len > manager_stack_lo;
}

/* Set while a program thread takes the manager thread out of the process
 * (manager_leave): the manager ends at the top of its loop. */
static int manager_leaving;

static int leaving(void)
{
	return __atomic_load_n(&manager_leaving, __ATOMIC_ACQUIRE);
}

/* A pause of ms that ends early when the manager is asked to leave. */
static void pause_unless_leaving(int ms)
{
	struct timespec pause = { ms / 1000, (ms % 1000) * 1000000L };

	syscall(SYS_futex, &manager_leaving, FUTEX_WAIT_PRIVATE, 0, &pause,
		NULL, 0);
}

/* The coordinator is gone (it exited, crashed or was killed): the process
 * runs on, and its manager thread joins the coordinator at the same
 * address again, with growing pauses, starting one when nobody answers
 * (ckpt_coord_connect_or_spawn; the socket's lock file decides between
 * several processes that try at once). Its HELLO carries its generation
 * and computation, so a new coordinator continues both. */
static void rejoin_coordinator(void)
{
	/* spread the first tries of the processes that lost it at once */
	int delay = CKPT_REJOIN_FIRST_MS + ckpt_real_getpid() % 50;

	for (int attempt = 1;; attempt++) {
		int r;

		pause_unless_leaving(delay);
		if (leaving())
			return;
		r = join_coordinator(CKPT_HELLO_F_REJOIN);
		if (r == 0) {
			ckpt_log("joined the coordinator at %s again",
				 ckpt.coord_addr);
			return;
		}
		if (attempt == 1)
			ckpt_log("cannot join the coordinator at %s again "
				 "(%s); trying every %d s at most",
				 ckpt.coord_addr, strerror(-r),
				 CKPT_REJOIN_MAX_MS / 1000);
		delay = delay * 2 > CKPT_REJOIN_MAX_MS ? CKPT_REJOIN_MAX_MS
						       : delay * 2;
	}
}

/* The starting thread connects and sends HELLO, the manager thread reads
 * the WELCOME: the coordinator knows of the process before the program
 * runs on (a round waits for a member that has not suspended yet,
 * docs/protocol.md, "Members of a round"), but the program does not wait
 * for the coordinator's answer, a round trip that every fork and exec
 * paid before. Set while ckpt.coord_fd's WELCOME is unread. */
static int welcome_pending;
static uint32_t welcome_pending_flags;

/* In the manager thread: the answer to the HELLO start_in_this_process
 * sent. A coordinator that was exiting meanwhile is joined again (or a
 * new one started) as send_hello_retrying does. */
static void finish_joining(void)
{
	int r;

	welcome_pending = 0;
	r = read_welcome(ckpt.coord_fd);
	if (r == 0)
		return;
	leave_coordinator();
	if (leaving())
		return;
	if (coordinator_was_exiting(r)) {
		pause_before_second_try();
		r = join_coordinator(welcome_pending_flags);
	}
	if (r < 0)
		ckpt_log("cannot reach the coordinator at %s: %s; trying "
			 "again in the background", ckpt.coord_addr,
			 strerror(-r));
}

/* futex: MANAGER_STARTING from the thread's creation until it has taken
 * its part in the program's masks (ckpt_signal_block_in_this_thread),
 * then MANAGER_STARTED. The creator does not wait for that (a fork or
 * exec would wait for the new thread to be scheduled); a move of the
 * checkpoint signal, which needs the manager's part, waits instead
 * (manager_wait_started). */
enum { MANAGER_NONE, MANAGER_STARTING, MANAGER_STARTED };
static int manager_started;

static void note_manager_started(void)
{
	__atomic_store_n(&manager_started, MANAGER_STARTED, __ATOMIC_RELEASE);
	syscall(SYS_futex, &manager_started, FUTEX_WAKE_PRIVATE, INT_MAX,
		NULL, NULL, 0);
}

/* Bounded (5 s): a manager thread being created has taken its part in
 * the program's masks. */
void manager_wait_started(void)
{
	struct timespec slice = { 0, 50 * 1000 * 1000 };

	for (int i = 0; i < 100 && __atomic_load_n(&manager_started,
			__ATOMIC_ACQUIRE) == MANAGER_STARTING; i++)
		syscall(SYS_futex, &manager_started, FUTEX_WAIT_PRIVATE,
			MANAGER_STARTING, &slice, NULL, 0);
}

#define MANAGER_THREAD_NAME "ckpt-manager"

static void *manager_main(void *arg)
{
	union manager_msg msg;
	uint32_t len;
	int r;

	(void)arg;
	ckpt_signal_block_in_this_thread();
	/* told apart from the program's threads (ps -L, a debugger) */
	prctl(PR_SET_NAME, MANAGER_THREAD_NAME, 0, 0, 0);
	ckpt_internal_thread = 1;
	note_manager_started();
	if (welcome_pending)
		finish_joining();
	for (;;) {
		if (!leaving() && ckpt.coord_fd < 0)
			rejoin_coordinator();
		if (leaving())
			break;
		if (have_next_suspend) {
			have_next_suspend = 0;
			msg.do_ckpt = next_suspend;
			take_part_in_round(&msg.do_ckpt);
			continue;
		}
		r = ckpt_msg_recv(ckpt.coord_fd, &msg, sizeof(msg), &len, -1);
		switch (r) {
		case CKPT_MSG_DO_SUSPEND:
			take_part_in_round(&msg.do_ckpt);
			break;
		case CKPT_MSG_DO_KILL:
			kill(ckpt_real_getpid(), SIGKILL);
			break;
		case CKPT_MSG_DO_ABORT:
		case CKPT_MSG_DO_WRITE:
		case CKPT_MSG_DO_RESUME:
		case CKPT_MSG_DO_COMMIT:
			break; /* stale: no round of ours is open */
		default:
			if (r < 0 && !leaving())
				ckpt_log("lost the coordinator at %s (%s); "
					 "joining it again",
					 ckpt.coord_addr, strerror(-r));
			if (r < 0)
				leave_coordinator();
		}
	}
	leave_coordinator();
	__atomic_store_n(&manager_started, MANAGER_NONE, __ATOMIC_RELEASE);
	return NULL;
}

int manager_start(void)
{
	pthread_attr_t attr;
	pthread_t tid;
	sigset_t all, old;
	void *stack = NULL;
	int r = manager_stack(&stack);

	if (r < 0)
		return r;
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, stack, MANAGER_STACK_SIZE);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* The manager must never take the program's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	__atomic_store_n(&manager_started, MANAGER_STARTING, __ATOMIC_RELEASE);
	emulator_manager_number_begin();
	r = ckpt_real_pthread_create(&tid, &attr, manager_main, NULL);
	emulator_manager_number_end();
	if (r)
		__atomic_store_n(&manager_started, MANAGER_NONE,
				 __ATOMIC_RELEASE);
	else	/* named at once, before it first runs (a debugger looks) */
		pthread_setname_np(tid, MANAGER_THREAD_NAME);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return -r;
}

/* The manager thread of a restarted process: wait until the process is
 * whole again, then rejoin the coordinator the restart named. Memory was
 * saved before this generation was committed: the coordinator learns it
 * here, so that it never numbers a checkpoint like this image again. */
void manager_after_restart(uint64_t image_generation)
{
	int r;

	threads_manager_restored();
	/* restored with every signal blocked: a move of the checkpoint
	 * signal (ckpt_signal.c) must reach this thread too */
	threads_mask_ckpt_signal(SIG_UNBLOCK, NULL);
	/* the image was in flight when memory was captured */
	image_settled();
	ckpt_accel_open(); /* the kernel may be another one now */
	ckpt.coord_fd = -1;
	ckpt.restarts++;
	ckpt.generation = image_generation;
	namespaces_rebase();	/* the restart's, where it runs now */
	created_journal_epoch(image_generation);
	read_hostname();
	/* the program's threads wait for the HELLO, not for the WELCOME */
	r = send_hello_retrying(CKPT_HELLO_F_RESTARTED |
				CKPT_HELLO_F_IMAGE_GENERATION);
	threads_restart_hello_sent();
	if (r >= 0) {
		ckpt.coord_fd = r;
		welcome_pending_flags = CKPT_HELLO_F_RESTARTED |
					CKPT_HELLO_F_IMAGE_GENERATION;
		finish_joining();
	} else {
		ckpt_log("restarted, but cannot reach the coordinator at %s: "
			 "%s; trying again in the background",
			 ckpt.coord_addr, strerror(-r));
	}
	hooks_round_restarted();
}

static void start_in_this_process(uint32_t flags)
{
	int r = send_hello_retrying(flags);

	if (r < 0 && (r == -EINVAL || r == -EACCES)) {
		ckpt_log("cannot reach the coordinator at %s: %s; running "
			 "without checkpoints", ckpt.coord_addr[0] ?
			 ckpt.coord_addr : "(none)", strerror(-r));
		return;
	}
	if (r < 0) { /* gone for now: the manager thread joins it later */
		ckpt_log("cannot reach the coordinator at %s: %s; trying "
			 "again in the background", ckpt.coord_addr,
			 strerror(-r));
	} else {
		ckpt.coord_fd = r;
		welcome_pending_flags = flags;
		welcome_pending = 1;
	}
	r = manager_start();
	if (r < 0) {
		ckpt_log("cannot start the checkpoint thread: %s",
			 strerror(-r));
		welcome_pending = 0;
		leave_coordinator();
	}
}

#define MANAGER_LEAVE_MS (CKPT_SUSPEND_TIMEOUT_MS + 2000)

static int other_threads(void)
{
	char buf[2048];
	int n = ckpt_proc_status_field("/proc/self/status", "Threads", buf,
				       sizeof(buf));

	return n > 0 ? n - 1 : -1;
}

/* Take the manager thread out of the process, for a call the kernel
 * allows a single-threaded process only (unshare or setns of a user
 * namespace, wrappers/namespaces.c), the caller's checkpoint signal
 * blocked: its connection is shut down (a round it is in fails), and it
 * ends. 0 once the process has no other thread; -EBUSY when the program
 * has threads of its own (the call fails as it would without ckpt),
 * -ETIMEDOUT. manager_come_back starts it again either way. */
int manager_leave(void)
{
	manager_wait_started();	/* one just created takes a moment */
	if (ckpt_real_getpid() != vpid_real_from_virt(ckpt.vpid) ||
	    emulator_active() ||
	    __atomic_load_n(&manager_started, __ATOMIC_ACQUIRE) !=
	    MANAGER_STARTED || other_threads() != 1)
		return -EBUSY;
	__atomic_store_n(&manager_leaving, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &manager_leaving, FUTEX_WAKE_PRIVATE, INT_MAX,
		NULL, NULL, 0);
	lock_coord_fd();
	if (ckpt.coord_fd >= 0)
		shutdown(ckpt.coord_fd, SHUT_RDWR);
	unlock_coord_fd();
	for (int waited = 0; other_threads() != 0; waited += 5) {
		struct timespec slice = { 0, 5 * 1000 * 1000 };

		if (waited >= MANAGER_LEAVE_MS) {
			ckpt_log("the checkpoint thread did not end within "
				 "%d ms", MANAGER_LEAVE_MS);
			return -ETIMEDOUT;
		}
		nanosleep(&slice, NULL);
	}
	return 0;
}

/* After manager_leave: the manager thread again (it joins the
 * coordinator as a process that lost it, CKPT_HELLO_F_REJOIN). */
void manager_come_back(void)
{
	__atomic_store_n(&manager_leaving, 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&manager_started, __ATOMIC_ACQUIRE) ==
	    MANAGER_NONE)
		start_in_this_process(CKPT_HELLO_F_REJOIN);
}

/* A forked child is a new process of the computation: its own identity,
 * its own connection, its own manager thread. */
static void after_fork_in_child(void)
{
	/* a pid that a restored process goes by: wrappers/fork.c forks
	 * again */
	if (vpid_taken_by_another(ckpt_real_getpid()))
		syscall(SYS_exit_group, 0);
	manager_fds_after_fork_in_child();
	accept_queue_after_fork_in_child();
	if (ckpt.coord_fd >= 0) {
		ckpt_mark_own_fd(ckpt.coord_fd, 0);
		close(ckpt.coord_fd);
		ckpt.coord_fd = -1;
	}
	welcome_pending = 0; /* the parent's connection, closed above */
	coord_fd_lock = 0;   /* a thread of the parent's may have held it */
	image_in_flight = 0; /* the parent's image, not ours */
	threads_reset_after_fork();
	emulator_note_fork_child();
	emulator_threads_refresh();
	ckpt.vppid = ckpt.vpid;
	ckpt.launched = 0;
	vpid_reset_after_fork();
	thread_ids_after_fork();
	ckpt.vpid = vpid_self();
	ckpt.generation = 0;
	sections_after_fork_in_child();
	hooks_after_fork_in_child();
	record_inputs_forked();
	lock_order_forked();
	make_unique_id(); /* the host and the program are the parent's */
	start_in_this_process(0);
}

/* The virtual pid and the parent's survive exec: the program before the
 * exec passed them in CKPT_VPID="<virtual>:<real>:<parent virtual>", and
 * the translated pids of the others in CKPT_VPIDS. A program that
 * posix_spawn started finds its parent named there instead (the
 * variables are made before the child exists): it is a new process whose
 * parent is that virtual pid. Variables naming neither this process nor
 * its parent were left by a program outside the computation. */
/* "A:B[:C]": how many of the three numbers were read (strtol, not
 * sscanf: scanf's code is page faults in every program started). */
static int parse_vpid_var(const char *v, int num[3])
{
	char *end;
	int n;

	for (n = 0; n < 3; n++) {
		num[n] = (int)strtol(v, &end, 10);
		if (end == v)
			break;
		if (*end != ':') {
			n++;
			break;
		}
		v = end + 1;
	}
	return n;
}

static pid_t inherited_vpid(pid_t real, pid_t *vppid, int *ours)
{
	const char *v = getenv("CKPT_VPID");
	int num[3] = { 0, 0, 0 }, n, virt, r, pp;

	*vppid = 0;
	*ours = 0;
	if (!v)
		return real;
	n = parse_vpid_var(v, num);
	virt = num[0];
	r = num[1];
	pp = num[2];
	if (n < 2 || virt <= 0)
		return real;
	if (r != real) {
		if (r != syscall(SYS_getppid))
			return real;
		*vppid = virt;
		*ours = 1;
		return real;
	}
	if (n == 3 && pp > 0)
		*vppid = pp;
	*ours = 1;
	return virt;
}

/* This process, its parent and the others it may name. */
static void init_vpid_table(void)
{
	pid_t pid = ckpt_real_getpid(), vppid;
	int ours;

	ckpt.vpid = inherited_vpid(pid, &vppid, &ours);
	vpid_init(ckpt.vpid, pid);
	if (ours) {
		vpid_load_translated(getenv("CKPT_VPIDS"));
		/* what named our real pid before is gone */
		vpid_forget_real(pid);
		vpid_map(ckpt.vpid, pid);
	}
	/* getppid() keeps the parent's virtual pid */
	if (vppid)
		vpid_map(vppid, syscall(SYS_getppid));
	unsetenv("CKPT_VPID");
	unsetenv("CKPT_VPIDS");
	ckpt.vppid = vppid ? vppid : getppid();
}

/* Where this library was loaded from, for the environment of exec. */
static void remember_library_path(void)
{
	Dl_info info;

	if (dladdr(&ckpt, &info) && info.dli_fname)
		exec_remember_environment(info.dli_fname);
}

__attribute__((constructor)) static void ckpt_init(void)
{
	emulator_threads_init();
	tid_address_init();
	init_vpid_table();
	pipes_init_outside(getenv("CKPT_OUTSIDE"));
	unsetenv("CKPT_OUTSIDE");
	created_journal_inherit(getenv("CKPT_EPOCH"));
	unsetenv("CKPT_EPOCH");
	ckpt.launched = getenv("CKPT_LAUNCHED") != NULL;
	unsetenv("CKPT_LAUNCHED");
	namespaces_take_base(getenv("CKPT_NS"));
	unsetenv("CKPT_NS");
	if (getenv("CKPT_HOST"))
		ckpt_fmt(inherited_host, sizeof(inherited_host), "%s",
			 getenv("CKPT_HOST"));
	unsetenv("CKPT_HOST");
	read_settings();
	make_identity();
	remember_library_path();
	if (!ckpt.signal) {
		ckpt_log("every real-time signal has a handler: running "
			 "without checkpoints");
		return;
	}
	if (threads_install_handler() < 0) {
		ckpt_log("cannot install the handler of signal %d: %s; "
			 "running without checkpoints", ckpt.signal,
			 strerror(errno));
		return;
	}
	/* the program before an exec blocked the signal for the exec
	 * (wrappers/exec.c); one that came meanwhile is taken, ignored */
	threads_mask_ckpt_signal(SIG_UNBLOCK, NULL);
	signals_all_return_through_libckpt();
	pthread_atfork(NULL, NULL, after_fork_in_child);
	manager_fds_init();
	ckpt_accel_open();
	embedding_enable();
	start_in_this_process(0);
}
