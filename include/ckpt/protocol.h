/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The coordinator protocol: one definition of every message.
 * docs/protocol.md tells the same in prose; keep both true.
 *
 * Every message is a struct ckpt_msg_header followed by `len` bytes of
 * payload, sent with a single sendmsg() so no Nagle/delayed-ACK stall can
 * split it. Peers: a process (libckpt's manager thread), a command
 * (ckpt_command), and the coordinator.
 */
#ifndef CKPT_PROTOCOL_H
#define CKPT_PROTOCOL_H

#include <stdint.h>

#define CKPT_MSG_MAGIC		0x434b5054u	/* "CKPT" */
#define CKPT_PROTOCOL_VERSION	1
#define CKPT_MSG_MAX_PAYLOAD	(1u << 20)
#define CKPT_SECRET_LEN		32		/* hex chars, TCP only */

enum ckpt_msg_type {
	/* process -> coordinator */
	CKPT_MSG_HELLO = 1,		/* struct ckpt_msg_hello */
	CKPT_MSG_SUSPENDED = 2,		/* struct ckpt_msg_result */
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

struct ckpt_msg_hello {
	int32_t real_pid;
	int32_t vpid;
	int32_t vppid;
	uint32_t flags;			/* CKPT_HELLO_F_* */
	uint64_t generation;		/* last checkpoint generation seen */
	char program[64];
	char unique_id[64];
	char hostname[64];
	char secret[CKPT_SECRET_LEN + 1]; /* TCP: per-user secret; else "" */
	char reserved[7];
	uint64_t computation_id;	/* the computation it belonged to
					   (restarted: its image's); 0 none */
};

/* ckpt_msg_welcome.flags (0 from an older coordinator) */
#define CKPT_WELCOME_F_UNRESTORED 0x1	/* takes CKPT_MSG_UNRESTORED */

struct ckpt_msg_welcome {
	uint64_t computation_id;
	uint32_t interval_s;		/* 0: no interval checkpoints */
	uint32_t flags;			/* CKPT_WELCOME_F_*; was reserved */
};

/* Followed by text_len bytes: NUL-terminated lines, one per thing a
 * restart will not bring back ("fd 5: an epoll instance ...: ..."). */
struct ckpt_msg_unrestored {
	uint64_t generation;		/* the round being suspended */
	uint32_t text_len;		/* bytes of text incl. NUL */
	uint32_t reserved;
};

struct ckpt_msg_do_checkpoint {
	uint64_t generation;
	char ckpt_dir[4096];		/* "" = the process's own directory */
};

struct ckpt_msg_result {
	uint64_t generation;
	int32_t error;			/* 0 or a positive errno */
	uint32_t reserved;
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
};

struct ckpt_msg_cmd {
	uint32_t cmd;			/* enum ckpt_cmd */
	uint32_t arg;
	char secret[CKPT_SECRET_LEN + 1];
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

#endif /* CKPT_PROTOCOL_H */
