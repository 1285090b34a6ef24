/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The coordinator protocol: one definition of every message.
 * docs/protocol.md tells the same in prose; keep both true.
 *
 * Every message is a struct ckpt_msg_header followed by `len` bytes of
 * payload, sent with a single sendmsg() so no Nagle/delayed-ACK stall can
 * split it. Peers: a process (libckpt's manager thread), a command
 * (ckpt_command), and the coordinator.
 *
 * TCP connections start with a handshake (AUTH_CHALLENGE, AUTH_PROOF,
 * AUTH_RESPONSE) in which each side proves it knows the per-user secret
 * without sending it; every later message on that connection carries a
 * CKPT_AUTH_MAC_LEN-byte trailer after its payload (not counted in
 * `len`): HMAC-SHA256 under that connection's key for its direction over
 * (message number, header, payload). Unix sockets rely on SO_PEERCRED and
 * carry no trailer. docs/protocol.md, "Authentication".
 */
#ifndef CKPT_PROTOCOL_H
#define CKPT_PROTOCOL_H

#include <stdint.h>

#define CKPT_MSG_MAGIC		0x434b5054u	/* "CKPT" */
#define CKPT_PROTOCOL_VERSION	2		/* 2: TCP handshake + MACs */
#define CKPT_PROTOCOL_VERSION_UNIX_OLD 1	/* still taken on Unix
						   sockets (same framing) */
#define CKPT_MSG_MAX_PAYLOAD	(1u << 20)
#define CKPT_SECRET_LEN		32		/* hex chars, TCP only */
#define CKPT_AUTH_NONCE_LEN	32
#define CKPT_AUTH_MAC_LEN	32		/* HMAC-SHA256 */
/* Highest checkpoint generation a HELLO may bring: far above any real
 * count (one per second for millions of years), far below a wrap. */
#define CKPT_GENERATION_MAX	(1ull << 48)

enum ckpt_msg_type {
	/* process -> coordinator */
	CKPT_MSG_HELLO = 1,		/* struct ckpt_msg_hello */
	CKPT_MSG_SUSPENDED = 2,		/* struct ckpt_msg_result; with
					   CKPT_RESULT_F_CHILDREN, the
					   process's children follow */
	CKPT_MSG_WRITTEN = 3,		/* struct ckpt_msg_result: image data
					   written; threads resumed, or with
					   CKPT_HELLO_F_RESUME_BARRIER still
					   stopped until DO_RESUME */
	CKPT_MSG_DURABLE = 4,		/* struct ckpt_msg_result: fsync'ed and
					   renamed into place; path set */
	CKPT_MSG_FAILED = 5,		/* struct ckpt_msg_result: this
					   checkpoint failed; threads resumed */
	CKPT_MSG_SYNCED = 6,		/* struct ckpt_msg_result: the new
					   image is fsync'ed under its
					   temporary name; waits for
					   DO_COMMIT or DO_ABORT */
	CKPT_MSG_UNRESTORED = 7,	/* struct ckpt_msg_unrestored + text:
					   what a restart of this checkpoint
					   will not restore (before
					   SUSPENDED; only to a coordinator
					   that set CKPT_WELCOME_F_UNRESTORED) */

	/* coordinator -> process */
	CKPT_MSG_WELCOME = 16,		/* struct ckpt_msg_welcome */
	CKPT_MSG_DO_SUSPEND = 17,	/* struct ckpt_msg_do_checkpoint */
	CKPT_MSG_DO_WRITE = 18,		/* struct ckpt_msg_do_checkpoint */
	CKPT_MSG_DO_ABORT = 19,		/* resume without writing */
	CKPT_MSG_DO_KILL = 20,		/* exit now (SIGKILL to self) */
	CKPT_MSG_DO_COMMIT = 21,	/* every image is synced: rename
					   yours into place, then DURABLE */
	CKPT_MSG_DO_RESUME = 22,	/* every process has WRITTEN its
					   image: resume, then sync */

	/* command -> coordinator */
	CKPT_MSG_CMD = 32,		/* struct ckpt_msg_cmd */
	/* coordinator -> command */
	CKPT_MSG_CMD_REPLY = 33,	/* struct ckpt_msg_cmd_reply + text */

	/* TCP handshake, before anything else; no MAC trailer */
	CKPT_MSG_AUTH_CHALLENGE = 48,	/* client -> coordinator:
					   struct ckpt_msg_auth_challenge */
	CKPT_MSG_AUTH_PROOF = 49,	/* coordinator -> client:
					   struct ckpt_msg_auth_proof */
	CKPT_MSG_AUTH_RESPONSE = 50,	/* client -> coordinator:
					   struct ckpt_msg_auth_response */
};

struct ckpt_msg_header {
	uint32_t magic;			/* CKPT_MSG_MAGIC */
	uint16_t version;		/* CKPT_PROTOCOL_VERSION */
	uint16_t type;			/* enum ckpt_msg_type */
	uint32_t len;			/* payload bytes that follow */
	uint32_t reserved;
};

/* ckpt_msg_hello.flags */
#define CKPT_HELLO_F_RESTARTED	0x1	/* came back from an image */
#define CKPT_HELLO_F_ACCEL	0x2	/* /dev/ckpt_accel is in use */
#define CKPT_HELLO_F_RESUME_BARRIER 0x4	/* after WRITTEN, waits for
					   DO_RESUME (older libckpt resumes
					   at once) */
#define CKPT_HELLO_F_IMAGE_GENERATION 0x8 /* restarted: generation is
					   that of the image it came from
					   (older libckpt: the one before) */
#define CKPT_HELLO_F_REJOIN	0x10	/* joins again after it lost its
					   coordinator: generation and
					   computation_id are its
					   computation's */
#define CKPT_HELLO_F_RESTART_GROUP 0x20 /* restarted: restart_group and
					   restart_group_size are set */

struct ckpt_msg_hello {
	int32_t real_pid;
	int32_t vpid;
	int32_t vppid;
	uint32_t flags;			/* CKPT_HELLO_F_* */
	uint64_t generation;		/* last checkpoint generation seen */
	char program[64];
	char unique_id[64];
	char hostname[64];
	char secret[CKPT_SECRET_LEN + 1]; /* always "": version 1 sent the
					   secret here in clear over TCP */
	char reserved[7];
	uint64_t computation_id;	/* the computation it belonged to
					   (restarted: its image's); 0 none */
	/* CKPT_HELLO_F_RESTART_GROUP: the restart that brought it back */
	uint64_t restart_group;		/* that restart's id on its host */
	uint32_t restart_group_size;	/* processes that restart brings */
	uint32_t reserved2;
};

/* ckpt_msg_welcome.flags (0 from an older coordinator) */
#define CKPT_WELCOME_F_UNRESTORED 0x1	/* takes CKPT_MSG_UNRESTORED */
#define CKPT_WELCOME_F_CHILDREN	0x2	/* takes SUSPENDED with the
					   process's children */

struct ckpt_msg_welcome {
	uint64_t computation_id;
	uint32_t interval_s;		/* 0: no interval checkpoints */
	uint32_t flags;			/* CKPT_WELCOME_F_*; was reserved */
	/* appended (0 from an older coordinator): the phase bounds of its
	 * rounds, so that a process never waits stopped much longer than
	 * the coordinator would (docs/protocol.md, "Failures") */
	uint32_t phase_timeout_ms;	/* suspend, abort; write stall x2 */
	uint32_t write_timeout_ms;	/* write, sync, commit, each */
};

/* Followed by text_len bytes: NUL-terminated lines, one per thing a
 * restart will not bring back ("fd 5: an inotify instance ...: ..."). */
struct ckpt_msg_unrestored {
	uint64_t generation;		/* the round being suspended */
	uint32_t text_len;		/* bytes of text incl. NUL */
	uint32_t reserved;
};

/* How a checkpoint writes its images: ckpt_msg_cmd.arg of
 * CKPT_CMD_CHECKPOINT and ckpt_msg_do_checkpoint.flags. */
#define CKPT_CHECKPOINT_F_COMPRESS 0x1	/* zstd-compressed extents (a
					   process launched with --compress
					   compresses every image anyway) */
#define CKPT_CHECKPOINT_F_INCREMENTAL 0x2 /* an incremental image: only
					   what changed since the previous
					   one (docs/image-format.md, "Chains
					   of incremental images") */
#define CKPT_CHECKPOINT_F_FORKED 0x4	/* a forked checkpoint: each process
					   forks a frozen copy that writes
					   its image while it runs on
					   (ignored with INCREMENTAL) */
#define CKPT_CHECKPOINT_F_SNAPSHOT 0x8	/* a snapshot's round (set by the
					   coordinator, with FORKED and the
					   snapshot's ckpt_dir): the process
					   keeps its generation and last image
					   as they were */
#define CKPT_CHECKPOINT_F_TEMPLATE 0x10	/* with SNAPSHOT, set by the
					   coordinator when the computation is
					   one process: keep the snapshot as a
					   frozen template process rather than
					   an image (docs/embedding.md,
					   "Template snapshots"); the DURABLE
					   path is then CKPT_TEMPLATE_PATH_
					   PREFIX "PID:IMAGE" */
#define CKPT_TEMPLATE_PATH_PREFIX "template:"
#define CKPT_CHECKPOINT_F_TEMPLATE_NOW 0x20 /* with TEMPLATE (set by the
					   coordinator when the round has one
					   member, on this host): resume and
					   answer DURABLE as soon as the
					   template exists, with no WRITTEN,
					   SYNCED or commit (nothing else to
					   be consistent with). In DO_SUSPEND:
					   a process without children may do
					   so right after it suspends, with no
					   SUSPENDED either; with children it
					   answers SUSPENDED, and the DO_WRITE
					   says again (the members are counted
					   then). A libckpt that ignores it
					   goes the long way */

struct ckpt_msg_do_checkpoint {
	uint64_t generation;
	char ckpt_dir[4096];		/* "" = the process's own directory;
					   libckpt refuses any other that its
					   user could not have chosen
					   (docs/security.md) */
	/* appended (absent, read as 0, from an older coordinator) */
	uint32_t flags;			/* CKPT_CHECKPOINT_F_* */
	uint32_t coordinator_pid;	/* with F_TEMPLATE: the coordinator's
					   pid, whose end ends the template
					   (was reserved: 0) */
	/* appended 2026-12-06 (0 from an older coordinator) */
	uint32_t members_on_host;	/* DO_WRITE of a checkpoint (not a
					   snapshot): how many processes of
					   the round run on the recipient's
					   host (its HELLO hostname), itself
					   included; recorded in the image,
					   so a restart can tell an image is
					   missing. 0: not said */
	uint32_t reserved;		/* 0 */
};

/* ckpt_msg_result.flags (0 from an older libckpt) */
#define CKPT_RESULT_F_CHILDREN	0x1	/* SUSPENDED only: followed by one
					   int32_t pid per child of any of
					   its threads (all of them, as
					   /proc/self/task/<tid>/children
					   list them once it is stopped) */
#define CKPT_SUSPENDED_MAX_CHILDREN 4096 /* more: sent without the list */

struct ckpt_msg_result {
	uint64_t generation;
	int32_t error;			/* 0 or a positive errno */
	uint32_t flags;			/* CKPT_RESULT_F_*; was reserved */
	char path[4096];		/* image path (DURABLE) */
	char message[512];		/* human-readable error, with context */
};

enum ckpt_cmd {
	CKPT_CMD_CHECKPOINT = 1,
	CKPT_CMD_STATUS = 2,
	CKPT_CMD_LIST = 3,
	CKPT_CMD_INTERVAL = 4,		/* arg = seconds, 0 disables */
	CKPT_CMD_KILL = 5,
	CKPT_CMD_QUIT = 6,
	/* snapshots (docs/embedding.md); an older coordinator answers
	 * EINVAL "unknown command" */
	CKPT_CMD_SNAPSHOT = 7,		/* reply: the new id */
	CKPT_CMD_SNAPSHOTS = 8,		/* reply: "ID AGE_MS KIB DIR" lines */
	CKPT_CMD_SNAPSHOT_IMAGES = 9,	/* arg = id; reply: image paths */
	CKPT_CMD_DROP = 10,		/* arg = id */
	CKPT_CMD_RESTORE_PREPARE = 11,	/* arg = id: KILL, then the reply of
					   SNAPSHOT_IMAGES, on one connection
					   (an unknown id kills nothing); an
					   older coordinator answers EINVAL
					   "unknown command" */
};

/* ckpt_msg_cmd.arg of STATUS, LIST and CHECKPOINT: the reply text is one
 * JSON object (docs/json.md); an older coordinator ignores it and sends
 * text, which the client tells by its first byte. */
#define CKPT_CMD_F_JSON		0x80000000u

struct ckpt_msg_cmd {
	uint32_t cmd;			/* enum ckpt_cmd */
	uint32_t arg;			/* INTERVAL: seconds; CHECKPOINT:
					   CKPT_CHECKPOINT_F_*; | F_JSON */
	char secret[CKPT_SECRET_LEN + 1]; /* always "" (see hello) */
	char reserved[7];
};

/* Followed by `text`, a NUL-terminated message printed by ckpt_command:
 * for CHECKPOINT one image path per line; errors one line each. After
 * text_len bytes, a successful CHECKPOINT may add a second NUL-terminated
 * text, warnings for stderr: one line per thing a restart will not
 * restore, naming its process (older ckpt_command reads only text). */
struct ckpt_msg_cmd_reply {
	int32_t status;			/* 0 ok, else a positive errno */
	uint32_t text_len;		/* bytes of text incl. NUL */
};

/* The client's fresh random nonce. */
struct ckpt_msg_auth_challenge {
	uint8_t nonce[CKPT_AUTH_NONCE_LEN];
};

/* The coordinator's nonce and its proof: HMAC-SHA256(secret,
 * "ckpt-v2 coordinator proof\0" || client nonce || coordinator nonce). */
struct ckpt_msg_auth_proof {
	uint8_t nonce[CKPT_AUTH_NONCE_LEN];
	uint8_t proof[CKPT_AUTH_MAC_LEN];
};

/* Sent only once the coordinator's proof checked out: HMAC-SHA256(secret,
 * "ckpt-v2 client proof\0" || client nonce || coordinator nonce). */
struct ckpt_msg_auth_response {
	uint8_t proof[CKPT_AUTH_MAC_LEN];
};

/*
 * Orders to a template process (libckpt-preload/snapshot_template.c),
 * sent by ckpt_command with sigqueue(2): signal CKPT_TEMPLATE_SIGNAL,
 * sival_ptr = CKPT_TEMPLATE_ORDER(what, requester pid, requester fd).
 * The template takes the requester's fd (the write end of a pipe) with
 * pidfd_getfd(2) and writes struct ckpt_template_report records to it;
 * for RESTORE it takes the requester's fds 0-2 as the restored process's
 * stdio too.
 */
#define CKPT_TEMPLATE_SIGNAL	62
#define CKPT_TEMPLATE_RESTORE	1	/* fork a restored process */
#define CKPT_TEMPLATE_WRITE	2	/* write the snapshot's image */
#define CKPT_TEMPLATE_F_STOPPED	0x80	/* with RESTORE: the restored process
					   stops itself (SIGSTOP) once every
					   thread is back, as ckpt_restart
					   --stopped */
#define CKPT_TEMPLATE_ORDER(what, pid, fd) \
	((uint64_t)(uint32_t)(pid) | (uint64_t)((fd) & 0xffff) << 32 | \
	 (uint64_t)((what) & 0xff) << 48)
#define CKPT_TEMPLATE_ORDER_PID(v)	((int)((v) & 0xffffffffu))
#define CKPT_TEMPLATE_ORDER_FD(v)	((int)(((v) >> 32) & 0xffff))
#define CKPT_TEMPLATE_ORDER_WHAT(v)	((int)(((v) >> 48) & 0xff))

enum ckpt_template_event {
	CKPT_TEMPLATE_STARTED = 1,	/* value: the restored process's pid */
	CKPT_TEMPLATE_EXITED = 2,	/* value: its wait status */
	CKPT_TEMPLATE_WRITTEN = 3,	/* value: 0, or -errno */
	CKPT_TEMPLATE_FAILED = 4,	/* value: -errno; the order failed */
};

struct ckpt_template_report {
	int32_t event;			/* enum ckpt_template_event */
	int32_t value;
};

#endif /* CKPT_PROTOCOL_H */
