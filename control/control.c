// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libckpt-control (include/ckpt/control.h): one command per call, on a
 * connection of its own, with the timeouts ckpt_command always used.
 * Prints nothing.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/control.h"
#include "ckpt/coord_client.h"
#include "template_orders.h"
#include "tool_common.h"

#define CONNECT_TIMEOUT_MS	5000
#define CHECKPOINT_TIMEOUT_MS	600000	/* coordinator gives up at 300 s */
#define KILL_TIMEOUT_MS		60000	/* coordinator gives up at 10 s */
#define QUICK_TIMEOUT_MS	10000

static int fail(struct ckpt_control_error *err, int r, const char *fmt,
		const char *a, const char *b)
{
	if (err) {
		err->code = r < 0 ? -r : r;
		snprintf(err->message, sizeof(err->message), fmt, a, b);
	}
	return r < 0 ? r : -r;
}

int ckpt_control_open(struct ckpt_control *c, const char *addr,
		      struct ckpt_control_error *err)
{
	char msg[512];
	int r;

	memset(c, 0, sizeof(*c));
	c->connect_timeout_ms = CONNECT_TIMEOUT_MS;
	if (err)
		memset(err, 0, sizeof(*err));
	r = tool_resolve_addr_quiet(addr, c->addr, sizeof(c->addr), msg,
				    sizeof(msg));
	return r < 0 ? fail(err, r, "%s%s", msg, "") : 0;
}

/* The commands whose reply can be JSON (CKPT_CMD_F_JSON). */
static uint32_t wants_json(const struct ckpt_control *c, uint32_t cmd)
{
	bool json_reply = cmd == CKPT_CMD_STATUS || cmd == CKPT_CMD_LIST ||
			  cmd == CKPT_CMD_CHECKPOINT;

	return c->json && json_reply ? CKPT_CMD_F_JSON : 0;
}

static int command(struct ckpt_control *c, uint32_t cmd, uint32_t arg,
		   int timeout_ms, struct ckpt_control_reply *reply,
		   struct ckpt_control_error *err)
{
	struct ckpt_control_reply ignored;
	int fd, r;

	if (!reply)
		reply = &ignored;
	memset(reply, 0, sizeof(*reply));
	if (err)
		memset(err, 0, sizeof(*err));
	fd = ckpt_coord_connect(c->addr, c->connect_timeout_ms);
	if (fd < 0)
		return fail(err, fd, "no coordinator at %s: %s", c->addr,
			    fd == -EACCES ? "it runs as another user" :
			    tool_strerror(fd));
	r = tool_command_warnings(fd, cmd, arg | wants_json(c, cmd),
				  timeout_ms, &reply->status, &reply->text,
				  &reply->warnings);
	close(fd);
	if (r < 0)
		return fail(err, r, "coordinator at %s: no reply: %s", c->addr,
			    r == -ECONNRESET ? "it closed the connection" :
			    tool_strerror(r));
	if (wants_json(c, cmd) && !reply->status && reply->text[0] != '{')
		r = fail(err, -EPROTONOSUPPORT, "the coordinator at %s is too "
			 "old for JSON replies (it answered in text)%s",
			 c->addr, "");
	else if (reply->status)
		r = fail(err, reply->status, "the coordinator reports "
			 "failure: %s%s", reply->text[0] ? reply->text :
			 tool_strerror(reply->status), "");
	if (reply == &ignored)
		ckpt_control_reply_free(reply);
	return r;
}

int ckpt_control_checkpoint(struct ckpt_control *c, uint32_t flags,
			    struct ckpt_control_reply *reply,
			    struct ckpt_control_error *err)
{
	uint32_t wire = (flags & CKPT_CONTROL_COMPRESS ?
			 CKPT_CHECKPOINT_F_COMPRESS : 0) |
			(flags & CKPT_CONTROL_INCREMENTAL ?
			 CKPT_CHECKPOINT_F_INCREMENTAL : 0) |
			(flags & CKPT_CONTROL_FORKED ?
			 CKPT_CHECKPOINT_F_FORKED : 0);

	return command(c, CKPT_CMD_CHECKPOINT, wire, CHECKPOINT_TIMEOUT_MS,
		       reply, err);
}

int ckpt_control_list(struct ckpt_control *c,
		      struct ckpt_control_reply *reply,
		      struct ckpt_control_error *err)
{
	return command(c, CKPT_CMD_LIST, 0, QUICK_TIMEOUT_MS, reply, err);
}

int ckpt_control_status(struct ckpt_control *c,
			struct ckpt_control_reply *reply,
			struct ckpt_control_error *err)
{
	return command(c, CKPT_CMD_STATUS, 0, QUICK_TIMEOUT_MS, reply, err);
}

int ckpt_control_set_interval(struct ckpt_control *c, uint32_t seconds,
			      struct ckpt_control_reply *reply,
			      struct ckpt_control_error *err)
{
	return command(c, CKPT_CMD_INTERVAL, seconds, QUICK_TIMEOUT_MS, reply,
		       err);
}

int ckpt_control_kill(struct ckpt_control *c,
		      struct ckpt_control_reply *reply,
		      struct ckpt_control_error *err)
{
	return command(c, CKPT_CMD_KILL, 0, KILL_TIMEOUT_MS, reply, err);
}

int ckpt_control_quit(struct ckpt_control *c,
		      struct ckpt_control_reply *reply,
		      struct ckpt_control_error *err)
{
	return command(c, CKPT_CMD_QUIT, 0, KILL_TIMEOUT_MS, reply, err);
}

int ckpt_control_snapshot(struct ckpt_control *c, uint64_t *id,
			  struct ckpt_control_reply *reply,
			  struct ckpt_control_error *err)
{
	struct ckpt_control_reply own;
	struct ckpt_control_reply *rep = reply ? reply : &own;
	int r = command(c, CKPT_CMD_SNAPSHOT, 0, CHECKPOINT_TIMEOUT_MS, rep,
			err);

	*id = r == 0 ? strtoull(rep->text, NULL, 10) : 0;
	if (rep == &own)
		ckpt_control_reply_free(&own);
	return r;
}

int ckpt_control_snapshots(struct ckpt_control *c,
			   struct ckpt_control_reply *reply,
			   struct ckpt_control_error *err)
{
	return command(c, CKPT_CMD_SNAPSHOTS, 0, QUICK_TIMEOUT_MS, reply, err);
}

/* Ids travel in the command's 32-bit argument. */
static int snapshot_id_arg(uint64_t id, struct ckpt_control_error *err)
{
	char text[32];

	if (id && id <= UINT32_MAX)
		return 0;
	snprintf(text, sizeof(text), "%llu", (unsigned long long)id);
	return fail(err, -ENOENT, "no snapshot %s%s", text, "");
}

static int snapshot_command(struct ckpt_control *c, uint32_t cmd,
			    uint64_t id, struct ckpt_control_reply *reply,
			    struct ckpt_control_error *err)
{
	int r = snapshot_id_arg(id, err);

	return r < 0 ? r : command(c, cmd, (uint32_t)id, QUICK_TIMEOUT_MS,
				   reply, err);
}

/* A template snapshot's answer becomes its image, written now by the
 * template: what callers of the image interface expect. */
static int image_of_template(struct ckpt_control_reply *reply,
			     struct ckpt_control_error *err)
{
	struct template_ref t;
	char *text;
	int r = template_parse(reply->text, &t);

	if (r == 0)
		r = template_write_image(&t);
	if (r < 0)
		return fail(err, r, "the snapshot's template process could not "
			    "write its image: %s%s", template_strerror(r), "");
	text = malloc(strlen(t.image) + 2);
	if (!text)
		return fail(err, -ENOMEM, "out of memory%s%s", "", "");
	sprintf(text, "%s\n", t.image);
	free(reply->text);
	reply->text = text;
	return 0;
}

/* A tree's templates write their images now (docs/embedding.md,
 * "Template snapshots of a tree"): the answer becomes those images. */
static int images_of_tree(struct ckpt_control_reply *reply,
			  struct ckpt_control_error *err)
{
	pid_t failed;
	char pid[24];
	int r = template_tree_images(&reply->text, &failed);

	snprintf(pid, sizeof(pid), failed ? " (template process %d)" : "",
		 (int)failed);
	if (r < 0)
		return fail(err, r, "the snapshot's templates could not write "
			    "their images%s: %s", pid, template_strerror(r));
	return 0;
}

int ckpt_control_snapshot_images(struct ckpt_control *c, uint64_t id,
				 struct ckpt_control_reply *reply,
				 struct ckpt_control_error *err)
{
	int r = snapshot_command(c, CKPT_CMD_SNAPSHOT_IMAGES, id, reply, err);

	if (r == 0 && template_reply_is_template(reply->text))
		r = image_of_template(reply, err);
	else if (r == 0 && template_reply_has_templates(reply->text))
		r = images_of_tree(reply, err);
	return r;
}

int ckpt_control_drop(struct ckpt_control *c, uint64_t id,
		      struct ckpt_control_reply *reply,
		      struct ckpt_control_error *err)
{
	return snapshot_command(c, CKPT_CMD_DROP, id, reply, err);
}

static int kill_all(struct ckpt_control *c, struct ckpt_control_error *err)
{
	struct ckpt_control_reply killed;
	int r = ckpt_control_kill(c, &killed, err);

	ckpt_control_reply_free(&killed);
	return r;
}

/* The images first (an unknown id kills nothing), then every process. */
int ckpt_control_restore(struct ckpt_control *c, uint64_t id,
			 struct ckpt_control_reply *reply,
			 struct ckpt_control_error *err)
{
	int r = ckpt_control_snapshot_images(c, id, reply, err);

	return r < 0 ? r : kill_all(c, err);
}

/* As ckpt_control_restore, a template snapshot's answer left as it is:
 * one request (RESTORE_PREPARE), or the two an older coordinator takes. */
int ckpt_control_restore_template(struct ckpt_control *c, uint64_t id,
				  struct ckpt_control_reply *reply,
				  struct ckpt_control_error *err)
{
	struct ckpt_control_reply own = { 0 };
	struct ckpt_control_reply *rep = reply ? reply : &own;
	int r = snapshot_id_arg(id, err), older;

	if (r < 0)
		return r;
	r = command(c, CKPT_CMD_RESTORE_PREPARE, (uint32_t)id,
		    KILL_TIMEOUT_MS, rep, err);
	older = r == -EINVAL && rep->text &&
		strstr(rep->text, "unknown command");
	if (older) {
		ckpt_control_reply_free(rep);
		r = snapshot_command(c, CKPT_CMD_SNAPSHOT_IMAGES, id, rep, err);
		if (r == 0)
			r = kill_all(c, err);
	}
	if (rep == &own)
		ckpt_control_reply_free(&own);
	return r;
}

void ckpt_control_reply_free(struct ckpt_control_reply *reply)
{
	free(reply->text);
	free(reply->warnings);
	reply->text = reply->warnings = NULL;
}
