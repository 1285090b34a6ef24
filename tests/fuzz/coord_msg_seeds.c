// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The seed corpus of the coord_msg fuzz target: real message sequences,
 * laid out by include/ckpt/protocol.h, in the target's record form
 * (tests/fuzz/fuzz_coord_msg.c). Usage: coord_msg_seeds DIR.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/protocol.h"

static unsigned char seed[1 << 17];
static size_t seed_len;

static void put(const void *p, size_t n)
{
	if (seed_len + n > sizeof(seed))
		abort();
	memcpy(seed + seed_len, p, n);
	seed_len += n;
}

/* One record: conn, length, then a whole message. */
static void msg(int conn, uint16_t type, const void *payload, uint32_t len)
{
	struct ckpt_msg_header h = {
		.magic = CKPT_MSG_MAGIC, .version = CKPT_PROTOCOL_VERSION,
		.type = type, .len = len,
	};
	size_t n = sizeof(h) + len;
	unsigned char rec[3] = { (unsigned char)conn, n & 0xff, n >> 8 };

	put(rec, 3);
	put(&h, sizeof(h));
	put(payload, len);
}

static void hello(int conn, int vpid, bool tcp)
{
	struct ckpt_msg_hello h = { .real_pid = 4242 + vpid, .vpid = vpid,
		.vppid = 1, .flags = CKPT_HELLO_F_RESUME_BARRIER };

	snprintf(h.program, sizeof(h.program), "app%d", vpid);
	snprintf(h.unique_id, sizeof(h.unique_id), "id-%d", vpid);
	snprintf(h.hostname, sizeof(h.hostname), "node1");
	if (tcp)
		memset(h.secret, 'a', CKPT_SECRET_LEN);
	msg(conn, CKPT_MSG_HELLO, &h, sizeof(h));
}

static void cmd(int conn, uint32_t what, uint32_t arg, bool tcp)
{
	struct ckpt_msg_cmd c = { .cmd = what, .arg = arg };

	if (tcp)
		memset(c.secret, 'a', CKPT_SECRET_LEN);
	msg(conn, CKPT_MSG_CMD, &c, sizeof(c));
}

static void result(int conn, uint16_t type, int err, const char *path,
		   const char *text)
{
	struct ckpt_msg_result r = { .generation = 1, .error = err };

	snprintf(r.path, sizeof(r.path), "%s", path);
	snprintf(r.message, sizeof(r.message), "%s", text);
	msg(conn, type, &r, sizeof(r));
}

static void unrestored(int conn, const char *text)
{
	unsigned char buf[512];
	struct ckpt_msg_unrestored u = { .generation = 1,
		.text_len = (uint32_t)strlen(text) + 1 };

	memcpy(buf, &u, sizeof(u));
	memcpy(buf + sizeof(u), text, u.text_len);
	msg(conn, CKPT_MSG_UNRESTORED, buf, sizeof(u) + u.text_len);
}

static void start(bool tcp)
{
	seed_len = 0;
	seed[seed_len++] = tcp;
}

static void save(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(seed, 1, seed_len, f) != seed_len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void full_round(const char *dir, bool tcp)
{
	start(tcp);
	hello(0, 7, tcp);
	hello(2, 8, tcp);
	cmd(1, CKPT_CMD_CHECKPOINT, 0, tcp);
	unrestored(0, "fd 5: an eventfd: not restored yet\n");
	result(0, CKPT_MSG_SUSPENDED, 0, "", "");
	result(2, CKPT_MSG_SUSPENDED, 0, "", "");
	result(0, CKPT_MSG_WRITTEN, 0, "/ckpt/.ckpt_app7_id-7.img.tmp.1", "");
	result(2, CKPT_MSG_WRITTEN, 0, "/ckpt/.ckpt_app8_id-8.img.tmp.2", "");
	result(0, CKPT_MSG_SYNCED, 0, "/ckpt/.ckpt_app7_id-7.img.tmp.1", "");
	result(2, CKPT_MSG_SYNCED, 0, "/ckpt/.ckpt_app8_id-8.img.tmp.2", "");
	result(0, CKPT_MSG_DURABLE, 0, "/ckpt/ckpt_app7_id-7.img", "");
	result(2, CKPT_MSG_DURABLE, 0, "/ckpt/ckpt_app8_id-8.img", "");
	cmd(3, CKPT_CMD_STATUS, 0, tcp);
	save(dir, tcp ? "round-tcp" : "round-unix");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: coord_msg_seeds DIR\n");
		return 2;
	}
	full_round(argv[1], false);
	full_round(argv[1], true);

	start(false);
	hello(0, 3, false);
	cmd(1, CKPT_CMD_CHECKPOINT, 0, false);
	result(0, CKPT_MSG_FAILED, 5, "", "cannot suspend thread 7: \x1b[2J");
	cmd(2, CKPT_CMD_LIST, 0, false);
	cmd(3, CKPT_CMD_KILL, 0, false);
	save(argv[1], "failed-and-kill");

	start(false);
	cmd(0, CKPT_CMD_INTERVAL, 5, false);
	cmd(1, CKPT_CMD_STATUS, 0, false);
	cmd(2, CKPT_CMD_QUIT, 0, false);
	save(argv[1], "commands");

	start(true);
	hello(0, 9, false);		/* no secret on TCP */
	cmd(1, CKPT_CMD_STATUS, 0, false);
	save(argv[1], "wrong-secret");
	return 0;
}
