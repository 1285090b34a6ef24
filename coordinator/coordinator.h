/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ckpt_coordinator internals: one process, one thread, one event loop.
 * Connections are processes (libckpt), commands (ckpt_command), or new
 * ones that have not said which yet. docs/protocol.md tells the story.
 */
#ifndef CKPT_COORDINATOR_H
#define CKPT_COORDINATOR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "ckpt/protocol.h"
#include "../protocol/auth.h"

#define COORD_HELLO_TIMEOUT_MS		5000	/* first message of a conn */
/* Phase timeouts (round_timeouts.c, docs/protocol.md "Failures"):
 * --phase-timeout / CKPT_PHASE_TIMEOUT, --write-timeout /
 * CKPT_WRITE_TIMEOUT override the defaults. */
#define COORD_PHASE_TIMEOUT_MS		5000	/* all SUSPENDED */
#define COORD_WRITE_TIMEOUT_MS		120000	/* write, sync, commit each */
#define COORD_STALL_FACTOR		2	/* writing with no progress:
						   this many phase timeouts */
#define COORD_KILL_TIMEOUT_MS		10000	/* all gone after DO_KILL */
#define COORD_KILL_TREE_DEPTH		64	/* below a process, at --kill */
#define COORD_KILLED_MAX		4096	/* local processes a kill waits
						   for, members or not */
#define COORD_KILLED_CHECK_MS		10	/* how often they are looked at */
#define COORD_STOP_CHECK_MS		1000	/* stopped processes in a round */
#define COORD_STOP_CHECK_MAX_MS		4000	/* one seen running, at most */
#define COORD_JOIN_TIMEOUT_MS		3000	/* a forked/exec'd member */
#define COORD_JOIN_CHECK_MS		20	/* look again for it */
#define COORD_MAX_EXPECTED		64
#define COORD_RESTART_JOIN_TIMEOUT_MS	3000	/* a restart's last process */
#define COORD_MAX_RESTART_GROUPS	64	/* restarts joining at once */
#define COORD_MAX_RESTART_GROUP_SIZE	4096
#define COORD_IDLE_EXIT_MS		60000	/* nobody ever came */
#define COORD_LINGER_MS			2000	/* after the last process left */
#define COORD_SNAPSHOTS_MAX		16	/* snapshots kept (snapshots.c) */
#define COORD_EXIT_FLUSH_MS		2000	/* last replies on exit */
#define COORD_MAX_IN_PAYLOAD		(64u << 10)
#define COORD_MAX_OUT_BYTES		(16u << 20)
/* Hostile or broken peers (conn_guard.c, coord_log.c) */
#define COORD_MAX_NEW_PER_PEER		64	/* unauthenticated, per uid
						   (Unix) or address (TCP) */
#define COORD_MAX_NEW			256	/* unauthenticated, in all */
#define COORD_LISTEN_BACKLOG		1024	/* a flood waits there */
#define COORD_NEW_GRACE_MS		250	/* not evicted that young */
#define COORD_ACCEPTS_PER_LOOP		16	/* then serve the others */
#define COORD_CMD_IDLE_TIMEOUT_MS	30000	/* command conn, no command */
#define COORD_ACCEPT_BACKOFF_MS		250	/* out of fds: first pause */
#define COORD_ACCEPT_BACKOFF_MAX_MS	2000
#define COORD_LOG_RATE			100	/* lines a second, average */
#define COORD_LOG_BURST			500
#define COORD_LOG_REPEAT_NOTE_MS	10000
#define COORD_LOG_MAX_BYTES		(8ll << 20)

/* A growable byte buffer (input/output queues, reply text). */
struct buf {
	char *data;
	size_t len;
	size_t cap;
};

void buf_append(struct buf *b, const void *data, size_t len);
void buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf_consume(struct buf *b, size_t len);
void buf_free(struct buf *b);
/* NUL-terminated view of the text (the NUL is not counted in len). */
const char *buf_str(struct buf *b);

enum conn_kind {
	CONN_NEW,		/* accepted, no message yet */
	CONN_PROCESS,		/* sent HELLO */
	CONN_COMMAND,		/* sent CMD */
};

/* /proc/PID files a round reads again and again (proc_files.c). */
enum proc_file {
	PROC_FILE_IO,		/* write progress (wchar) */
	PROC_FILE_STAT,		/* its state: stopped? */
	PROC_FILE_COUNT
};

/* Where a process is in the current checkpoint round. */
enum proc_state {
	PROC_IDLE,		/* not in a round */
	PROC_SUSPENDING,	/* DO_SUSPEND sent */
	PROC_SUSPENDED,
	PROC_WRITING,		/* DO_WRITE sent */
	PROC_WRITTEN,
	PROC_SYNCED,		/* image fsync'ed, waits for DO_COMMIT */
	PROC_COMMITTING,	/* DO_COMMIT sent */
	PROC_DURABLE,		/* done: image in place */
	PROC_FAILED,		/* done: sent FAILED, timed out or left */
	PROC_ABORTING,		/* DO_ABORT sent before it answered */
	PROC_ABORTED,		/* done: resumed without writing */
	PROC_DISCARDING,	/* DO_ABORT sent in phase 2: removes its
				   new image, answers FAILED(ECANCELED) */
};

enum pending_cmd {
	PENDING_NONE,
	PENDING_CHECKPOINT,	/* waits for a round */
	PENDING_KILL,		/* waits for the killed processes to go */
	PENDING_QUIT,		/* same, then the coordinator exits */
};

struct process_info {
	struct ckpt_msg_hello hello;
	enum proc_state state;
	uint64_t round_generation;	/* round it takes part in */
	struct buf unrestored;		/* this round: what its restart will
					   not restore, one line each */
	pid_t *children;		/* this round: its children, as its
					   SUSPENDED listed them */
	int nchildren;
	bool children_listed;		/* else read from /proc */
	char image_tmp[4096];		/* this round: its temporary image,
					   from WRITTEN or SYNCED */
	bool kill_sent;
	int64_t running_ms;		/* last seen running (an
					   answer, bytes it wrote); 0 never */
	int64_t look_every_ms;		/* this round: left alone this long
					   once seen running; 0: the first
					   interval (round_timeouts.c) */
	int64_t progress_ms;		/* this round: last sign of life
					   (an answer, bytes it wrote) */
	uint64_t wchar;			/* bytes written, /proc/PID/io */
	uint64_t wchar_at_write;	/* wchar at DO_WRITE: the round's
					   bytes are those written since */
	uint64_t expected_bytes;	/* its resident memory while writing
					   (read at the first status query),
					   about what its image will take */
	int64_t written_ms;		/* WRITTEN since the round began */
	pid_t local_pid;		/* its pid here, vouched for by the
					   kernel (peer_pid.c); 0: none, it
					   is not signalled nor looked at */
	int file_fd[PROC_FILE_COUNT];	/* this round: its /proc files, -1
					   when not open (proc_files.c) */
};

/* Where a TCP connection is in its handshake (auth_handshake.c). */
enum auth_state {
	AUTH_WAIT_CHALLENGE,	/* accepted: expects AUTH_CHALLENGE */
	AUTH_PROVEN_OURS,	/* AUTH_PROOF sent: expects AUTH_RESPONSE */
	AUTH_DONE,		/* both proved: MAC on every message */
};

struct conn_auth {
	enum auth_state state;
	uint8_t client_nonce[CKPT_AUTH_NONCE_LEN];
	uint8_t coord_nonce[CKPT_AUTH_NONCE_LEN];
	struct ckpt_auth_session keys;
};

struct conn {
	int fd;
	enum conn_kind kind;
	uint64_t serial;
	char peer[96];			/* "uid 1000 pid 42" or "1.2.3.4:5" */
	int64_t first_msg_deadline;
	int64_t last_msg_ms;		/* command: idle since */
	int64_t evictable_ms;		/* unauthenticated: the caps may
					   close it from then on */
	char peer_key[64];		/* "uid 1000" or the address: caps
					   unauthenticated conns per peer */
	pid_t peer_pid;			/* Unix: SO_PEERCRED pid; TCP: 0 */
	struct buf in;
	struct buf out;
	bool eof;			/* peer gone or broken: reap it */
	bool close_after_flush;
	bool reaped;			/* disconnect handled, free it */
	bool local_peer;		/* Unix socket: SO_PEERCRED vouches
					   for its host and uid */
	uint16_t peer_version;		/* of its first message; 0: none */
	size_t in_msg_bytes;		/* header + payload + trailer of the
					   message conn_next_msg() gave */
	struct conn_auth auth;		/* TCP only */
	struct process_info proc;
	enum pending_cmd pending;
	uint64_t pending_generation;	/* 0: queued for the next round */
	bool reply_json;		/* its command asked for JSON
					   (CKPT_CMD_F_JSON, json_replies.c) */
	bool watching_out;		/* registered for writable events */
	uint64_t restore_snapshot;	/* PENDING_KILL of RESTORE_PREPARE:
					   the snapshot to answer with */
};

/* A process the round waits for before writing (round_members.c). */
struct expected_proc {
	pid_t pid;
	pid_t parent;			/* 0: a member that left */
	int64_t since_ms;
};

/* A restart whose processes are still joining (restart_groups.c). */
struct restart_group {
	uint64_t id;			/* its restart plan's inode */
	char host[64];
	uint32_t size, joined;
	int64_t first_ms;		/* its first process joined */
};

/* The image of a process that left after WRITTEN, which the coordinator
 * synced and commits itself (orphan_images.c). */
struct orphan_image {
	int dir_fd;			/* its directory; -1: done */
	char tmp[256];			/* names in that directory */
	char final[256];
	char path[4096];		/* the final path, for the reply */
	char name[256];			/* the process, for humans */
	struct buf unrestored;
};

/* One image of a round, for the JSON reply (json_replies.c). */
struct round_image {
	char *path;
	char program[64];
	char host[64];
	int32_t vpid, pid;
	int64_t size;			/* bytes; -1: on another host; -2:
					   not read yet (json_replies.c) */
	int64_t written_ms;		/* since the round began; -1 unknown */
	int64_t durable_ms;
};

struct round {
	bool active;
	bool failed;
	bool writing;			/* phase 2: DO_WRITE sent */
	bool committing;		/* DO_COMMIT sent: no way back */
	bool resumed;		/* DO_RESUME sent: every image written */
	uint64_t generation;
	uint32_t flags;			/* CKPT_CHECKPOINT_F_* of its DO_WRITE */
	uint64_t snapshot_id;		/* 0: a checkpoint; else a snapshot */
	char dir[4200];			/* DO_* ckpt_dir: "" (each process's
					   own) or the snapshot's */
	int nprocs;
	int first_error;
	int64_t start_ms;
	int64_t suspended_ms;		/* all SUSPENDED */
	double cpu_start_ms;		/* the coordinator's CPU time then */
	int64_t phase_deadline;		/* the running phase's end */
	int64_t next_stop_check_ms;	/* look for stopped processes */
	int64_t next_member_check_ms;	/* 0: nobody expected */
	struct expected_proc expected[COORD_MAX_EXPECTED];
	int nexpected;
	struct buf paths;		/* one image path per line */
	struct buf hosts;		/* "HOST IP" of each path, per line
					   ("" for this host) */
	struct buf failures;		/* one failure per line */
	struct buf unrestored;		/* "process: what, why" per line, of
					   the processes that are durable */
	struct orphan_image *orphans;	/* images of processes that left */
	int norphans;
	struct round_image *images;	/* as paths, with what JSON tells */
	int nimages;
};

struct snapshot {
	uint64_t id;
	int64_t taken_ms;
	char dir[4200];			/* its images, on tmpfs */
	struct buf paths;		/* one image path per line (a
					   template's: the image it writes
					   when asked) */
	pid_t template_pid;		/* 0: images; else the template
					   process that holds it */
	int ntemplates;			/* a tree's: the "template PID IMAGE"
					   lines of paths */
};

struct last_round {
	uint64_t generation;		/* 0: none yet */
	bool ok;
	int nprocs;
	double ms;
	double busy_ms;			/* the coordinator's CPU time in it */
	int64_t end_ms;
};

struct coordinator {
	char addr[512];
	bool is_tcp;
	bool daemon;
	int notify_fd;
	int listen_fd;
	int lock_fd;
	char lock_path[4200];
	char secret[CKPT_SECRET_LEN + 1];
	uint64_t computation_id;
	uint32_t interval_s;
	int64_t next_interval_ms;	/* 0: none */
	uint64_t generation;		/* last one handed out */
	uint32_t queued_flags;		/* CKPT_CHECKPOINT_F_* asked for by
					   requests queued for the next round */
	int64_t phase_timeout_ms;	/* suspend; stall = 2x while writing */
	int64_t write_timeout_ms;	/* write, sync and commit, each */
	uint64_t next_serial;
	int64_t started_ms;
	bool ever_had_process;
	int64_t empty_since_ms;		/* when the last process left; 0 */
	bool quit;			/* exit once replies are out */
	int64_t kill_deadline;		/* 0: no KILL/QUIT in progress */
	pid_t killed[COORD_KILLED_MAX];	/* local processes SIGKILLed by the
					   kill in progress, still running
					   when last looked at */
	int nkilled;
	int64_t killed_check_ms;	/* next look at them; 0: none */
	int64_t accept_paused_until;	/* out of fds: listener not polled */
	int accept_backoff_ms;		/* the next pause */
	struct conn **conns;
	size_t nconns;
	size_t conns_cap;
	struct round round;
	struct restart_group groups[COORD_MAX_RESTART_GROUPS];
	int ngroups;
	struct last_round last;
	struct last_round last_ok;
	struct snapshot snapshots[COORD_SNAPSHOTS_MAX];
	int nsnapshots;
	uint64_t last_snapshot_id;
};

/* snapshots.c */
void snapshot_request(struct coordinator *co, struct conn *c);
void snapshot_round_done(struct coordinator *co, uint64_t id, bool ok,
			 const char *paths, const char *dir, struct buf *reply);
void snapshot_list(struct coordinator *co, struct conn *c);
bool snapshot_known(struct coordinator *co, uint64_t id);
void snapshot_note_kind(struct coordinator *co, int members,
			struct buf *notes);
void snapshot_images(struct coordinator *co, struct conn *c, uint64_t id);
void snapshot_drop(struct coordinator *co, struct conn *c, uint64_t id);
void snapshots_remove_all(struct coordinator *co);
/* CKPT_SNAPSHOT_KIND=image: every snapshot is images (no templates) */
bool snapshot_images_forced(void);

/* restart_script.c: a script that cannot be written adds a line to
 * warnings */
void write_restart_scripts(struct coordinator *co, const char *paths,
			   const char *hosts, uint64_t generation,
			   struct buf *warnings);

/* coordinator.c */
int64_t now_ms(void);
/* Read what c sent and handle its complete messages. */
void conn_read(struct coordinator *co, struct conn *c);
void conn_catch_up_hellos(struct coordinator *co);

/* conn_events.c: the main loop's wait */
void conn_events_add(struct conn *c);
void conn_events_update(struct conn *c);
void conn_events_wait(struct coordinator *co, int64_t deadline,
		      const sigset_t *wait_mask);

/* The earlier of two deadlines (ms, now_ms() clock), 0 meaning none. */
static inline int64_t deadline_earlier(int64_t a, int64_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

/* coord_log.c: sanitized, deduplicated, rate-limited and bounded */
void coord_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Write a pending "last message repeated" note when due. */
void coord_log_tick(void);

/* conn_guard.c: caps, deadlines and back-off against hostile peers */
void guard_on_accept(struct coordinator *co, struct conn *c);
/* accept() failed with err: true when the caller may try again. */
bool guard_on_accept_error(struct coordinator *co, int err);
void guard_on_accept_ok(struct coordinator *co);
bool guard_listener_paused(struct coordinator *co);
void guard_check_timeouts(struct coordinator *co);
int64_t guard_next_deadline(struct coordinator *co);

/* peer_pid.c: the pid of a process that the kernel vouches for */
pid_t peer_local_pid(struct coordinator *co, struct conn *c);
/* Its HELLO names this host (its pid may still be unverified). */
bool proc_names_this_host(const struct conn *c);
int count_processes(struct coordinator *co);
/* "app (vpid 7, pid 4242 on node1)" */
const char *proc_name(struct conn *c, char *out, size_t len);
/* image_twins.c: -EEXIST (what says why) when another member of the
 * round writes the same image as c */
int round_check_image_twin(struct coordinator *co, struct conn *c,
			   char *what, size_t len);

/* json_replies.c: replies for ckpt_command --json (docs/json.md) */
void json_reply_status(struct coordinator *co, struct conn *c);
void json_reply_list(struct coordinator *co, struct conn *c);
/* The CHECKPOINT reply of the finished round (malloc'ed). */
char *json_checkpoint_result(struct coordinator *co, int status);
void round_images_add(struct round *r, const char *path,
		      const struct conn *c);
void round_images_free(struct round *r);

/* conn.c */
struct conn *conn_add(struct coordinator *co, int fd, const char *peer);
void conn_send(struct conn *c, uint16_t type, const void *payload,
	       uint32_t len);
void conn_reply(struct conn *c, int status, const char *text);
/* warnings: a second text after text, for stderr ("": none) */
void conn_reply_warnings(struct conn *c, int status, const char *text,
			 const char *warnings);
int conn_flush(struct conn *c);
/* Read what is there; 0 or -errno (then c->eof is set). */
int conn_fill(struct conn *c);
/* Next complete message from c->in, 1 if one, 0 if none yet, -EPROTO
 * (bad header), -EBADMSG (wrong MAC on an authenticated connection). */
int conn_next_msg(struct conn *c, struct ckpt_msg_header *hdr,
		  const char **payload);
void conn_drop_msg(struct conn *c, const struct ckpt_msg_header *hdr);
void conn_free(struct conn *c);

/* auth_handshake.c */
/* A TCP connection that has not completed the handshake yet. */
bool auth_needed(const struct conn *c);
void auth_handle_msg(struct coordinator *co, struct conn *c,
		     const struct ckpt_msg_header *hdr, const char *p);
/* Bytes of MAC after each message's payload on c (0 before the handshake
 * completed, and on Unix sockets). */
size_t auth_trailer_len(const struct conn *c);
void auth_append_trailer(struct conn *c, const struct ckpt_msg_header *hdr,
			 const void *payload);
/* 0, or -EBADMSG: the message's trailer (after payload) is wrong. */
int auth_check_trailer(struct conn *c, const struct ckpt_msg_header *hdr,
		       const char *payload);

/* listener.c */
int listener_open(struct coordinator *co, char *err, size_t errlen);
void listener_accept(struct coordinator *co);
void listener_close(struct coordinator *co);

/* checkpoint_round.c */
void round_request(struct coordinator *co, struct conn *requester,
		   uint32_t flags);
/* A forked round whose images go to dir (a snapshot's): id != 0. */
void round_request_into(struct coordinator *co, struct conn *requester,
			uint32_t flags, const char *dir, uint64_t snapshot_id);
void round_on_result(struct coordinator *co, struct conn *c, uint16_t type,
		     const struct ckpt_msg_result *res);
void round_on_gone(struct coordinator *co, struct conn *c);
void round_on_unrestored(struct coordinator *co, struct conn *c,
			 const char *p, uint32_t len);
const char *proc_state_name(enum proc_state s);
bool round_in(struct coordinator *co, struct conn *c);
bool round_state_is_final(enum proc_state s);
void round_note_failure(struct coordinator *co, int err, const char *what);
void round_fail_process(struct coordinator *co, struct conn *c, int err,
			const char *what);
void round_advance(struct coordinator *co);

/* round_timeouts.c */
void round_timeouts_start_phase(struct coordinator *co, int64_t len_ms);
/* suspend, write, sync, commit or abort */
const char *round_phase_name(const struct round *r);
#define PROGRESS_UNKNOWN UINT64_MAX
/* /proc/PID/NAME's text, NUL-terminated (round_members.c): 0 or -errno */
int read_proc_text(pid_t pid, const char *name, char *buf, size_t len);
/* /proc/PID/io wchar, PROGRESS_UNKNOWN off this host or unreadable */
uint64_t proc_written_bytes(struct coordinator *co, struct conn *c);
/* Its resident memory in bytes, 0 when unknown. */
uint64_t proc_resident_bytes(const struct conn *c);
void round_timeouts_on_answer(struct conn *c);
void round_check_timeouts(struct coordinator *co);
int64_t round_next_deadline(struct coordinator *co);
void round_abort_participant(struct coordinator *co, struct conn *c);
void round_orphan_committed(struct coordinator *co, const char *name,
			    const char *path, const char *unrestored,
			    int err, const char *what);

/* proc_files.c */
void proc_files_init(struct conn *c);
void proc_files_close(struct conn *c);
/* Its /proc/PID/NAME's text, NUL-terminated: 0 or -errno. */
int proc_file_read(struct coordinator *co, struct conn *c, enum proc_file f,
		   char *buf, size_t len);

/* orphan_images.c */
int orphan_adopt(struct coordinator *co, struct conn *c, char *why,
		 size_t wlen);
void orphans_commit(struct coordinator *co);
void orphans_discard(struct coordinator *co);

/* round_members.c */
bool proc_on_this_host(const struct conn *c);
char local_process_state(pid_t pid);
bool local_process_gone(pid_t pid);
/* The same for a process of a round (its /proc file kept open). */
char round_process_state(struct coordinator *co, struct conn *c);
/* tracer.c */
pid_t local_process_tracer(pid_t pid);
const char *describe_tracer(pid_t pid, char *buf, size_t len);
struct conn *local_process_conn(const struct coordinator *co, pid_t pid);
bool member_in_other_pid_namespace(const struct coordinator *co, char *what,
				   size_t len);
bool member_traced_by_member(const struct coordinator *co, char *what,
			     size_t len);
const char *stopped_by_tracer_hint(const struct coordinator *co, pid_t pid,
				   char *buf, size_t len);
int local_children(pid_t pid, pid_t *out, int max);
void members_on_join(struct coordinator *co, struct conn *c);
void members_note_children(struct coordinator *co, struct conn *c,
			   const struct ckpt_msg_result *res, const char *p,
			   uint32_t len);
void members_forget_children(struct conn *c);
bool members_on_left_while_suspending(struct coordinator *co,
				      struct conn *c);
int members_complete(struct coordinator *co);

/* restart_groups.c */
void restart_groups_on_join(struct coordinator *co, const struct conn *c);
int restart_groups_complete(struct coordinator *co, int64_t *next_check_ms);

/* commands.c */
void command_handle(struct coordinator *co, struct conn *c,
		    const struct ckpt_msg_cmd *cmd);
void kill_check(struct coordinator *co);

#endif /* CKPT_COORDINATOR_H */
