/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control API (libckpt-control): what ckpt_command does, for a tool to
 * link. Each call connects to the coordinator (addresses as for every
 * tool: explicit, else $CKPT_COORD, else the per-user socket), sends one
 * command and returns its reply. Nothing is printed: every call returns 0
 * or -errno and, on failure, fills err with the code and a message naming
 * what failed. Text from the coordinator is returned as it came (it holds
 * text from the processes: sanitize it before showing it on a terminal).
 */
#ifndef CKPT_CONTROL_H
#define CKPT_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ckpt_control_error {
	int code;		/* positive errno; 0 when there is none */
	char message[1024];
};

struct ckpt_control {
	char addr[512];		/* the resolved coordinator address */
	int connect_timeout_ms;
	int json;		/* set to 1 after ckpt_control_open(): the
				   replies of status, list and checkpoint
				   are JSON objects (docs/json.md); a
				   coordinator too old to send them fails
				   the call with -EPROTONOSUPPORT */
};

/* A reply: malloc'ed text (free with ckpt_control_reply_free). */
struct ckpt_control_reply {
	int status;		/* the coordinator's: 0 or a positive errno */
	char *text;		/* e.g. one image path per line */
	char *warnings;		/* checkpoint: what a restart will not
				   restore, one line each ("" if none) */
};

/* ckpt_control_checkpoint() flags */
#define CKPT_CONTROL_COMPRESS	0x1	/* zstd-compressed images */
#define CKPT_CONTROL_INCREMENTAL 0x2	/* only what changed since the
					   previous image (a chain) */
#define CKPT_CONTROL_FORKED	0x4	/* each process forks a frozen copy
					   that writes its image while it
					   runs on (docs/embedding.md) */

int ckpt_control_open(struct ckpt_control *c, const char *addr,
		      struct ckpt_control_error *err);

/* Each: 0 when the coordinator answered with status 0; -errno otherwise
 * (err says why; reply, if filled, has the coordinator's own text). */
int ckpt_control_checkpoint(struct ckpt_control *c, uint32_t flags,
			    struct ckpt_control_reply *reply,
			    struct ckpt_control_error *err);
int ckpt_control_list(struct ckpt_control *c,
		      struct ckpt_control_reply *reply,
		      struct ckpt_control_error *err);
int ckpt_control_status(struct ckpt_control *c,
			struct ckpt_control_reply *reply,
			struct ckpt_control_error *err);
int ckpt_control_set_interval(struct ckpt_control *c, uint32_t seconds,
			      struct ckpt_control_reply *reply,
			      struct ckpt_control_error *err);
int ckpt_control_kill(struct ckpt_control *c,
		      struct ckpt_control_reply *reply,
		      struct ckpt_control_error *err);
/* Kill every process, then stop the coordinator. */
int ckpt_control_quit(struct ckpt_control *c,
		      struct ckpt_control_reply *reply,
		      struct ckpt_control_error *err);

/* Snapshots (docs/embedding.md, "Snapshots"). Ids are > 0. */
/* Take one: a frozen template process for a computation of one process,
 * else a forked checkpoint of every process into memory (tmpfs); *id is
 * its id. -ENOSPC: COORD_SNAPSHOTS_MAX (16) are kept already. */
int ckpt_control_snapshot(struct ckpt_control *c, uint64_t *id,
			  struct ckpt_control_reply *reply,
			  struct ckpt_control_error *err);
/* reply.text: one line per snapshot, "ID AGE_MS KIB DIR KIND" (KIB: the
 * memory its images or its template take; KIND "image" or
 * "template:PID"). */
int ckpt_control_snapshots(struct ckpt_control *c,
			   struct ckpt_control_reply *reply,
			   struct ckpt_control_error *err);
/* reply.text: the snapshot's image paths, one per line (ordinary images:
 * ckpt_restart takes them; a template snapshot's template writes its
 * image first). -ENOENT: no such snapshot. */
int ckpt_control_snapshot_images(struct ckpt_control *c, uint64_t id,
				 struct ckpt_control_reply *reply,
				 struct ckpt_control_error *err);
/* Kill every process of the computation once the snapshot is known;
 * reply.text: its images, for the caller to run `ckpt_restart` on (the
 * restored processes are the caller's children, on its terminal). */
int ckpt_control_restore(struct ckpt_control *c, uint64_t id,
			 struct ckpt_control_reply *reply,
			 struct ckpt_control_error *err);
/* The same, except that for a template snapshot reply.text is
 * "template PID IMAGE" and no image is written: the caller orders the
 * template to restore (CKPT_TEMPLATE_* in ckpt/protocol.h; a copy-on-write
 * fork, docs/embedding.md "Template snapshots"), as ckpt_command does. */
int ckpt_control_restore_template(struct ckpt_control *c, uint64_t id,
				  struct ckpt_control_reply *reply,
				  struct ckpt_control_error *err);
/* Remove the snapshot and its images. */
int ckpt_control_drop(struct ckpt_control *c, uint64_t id,
		      struct ckpt_control_reply *reply,
		      struct ckpt_control_error *err);

void ckpt_control_reply_free(struct ckpt_control_reply *reply);

#ifdef __cplusplus
}
#endif

#endif /* CKPT_CONTROL_H */
