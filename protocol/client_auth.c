// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Client side of the TCP handshake (docs/protocol.md, "Authentication"):
 * the coordinator proves it knows the per-user secret before this side
 * proves it does, neither sends the secret, and the keys of the connection
 * are remembered so ckpt_msg_send/recv (client_msg.c) seal and check every
 * later message. A connection is known by its socket's inode, so dup()s,
 * a move to a high fd (libckpt) and fork() keep their session.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "ckpt/coord_client.h"
#include "auth.h"
#include "client_internal.h"

/* The handshake is a few bytes each way: a peer that takes longer is not a
 * coordinator that works. */
#define HANDSHAKE_TIMEOUT_MS	10000
#define MAX_SESSIONS		8

struct socket_session {
	bool used;
	dev_t dev;
	ino_t ino;
	struct ckpt_auth_session keys;
};

static struct socket_session sessions[MAX_SESSIONS];
static unsigned int next_victim;

static int socket_identity(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

static struct socket_session *find_session(int fd)
{
	dev_t dev = 0;
	ino_t ino = 0;

	if (socket_identity(fd, &dev, &ino) < 0)
		return NULL;
	for (int i = 0; i < MAX_SESSIONS; i++)
		if (sessions[i].used && sessions[i].dev == dev &&
		    sessions[i].ino == ino)
			return &sessions[i];
	return NULL;
}

struct ckpt_auth_session *ckpt_cc_session_of(int fd)
{
	struct socket_session *s = find_session(fd);

	return s ? &s->keys : NULL;
}

void ckpt_cc_session_forget(int fd)
{
	struct socket_session *s = find_session(fd);

	if (s)
		memset(s, 0, sizeof(*s));
}

/* A free slot, else the oldest one: a tool or process has one or two
 * connections at a time; older entries belong to closed sockets. */
static int remember_session(int fd, const struct ckpt_auth_session *keys)
{
	struct socket_session *slot = NULL;
	dev_t dev = 0;
	ino_t ino = 0;
	int r = socket_identity(fd, &dev, &ino);

	if (r < 0)
		return r;
	for (int i = 0; i < MAX_SESSIONS && !slot; i++)
		if (!sessions[i].used)
			slot = &sessions[i];
	if (!slot)
		slot = &sessions[next_victim++ % MAX_SESSIONS];
	slot->used = true;
	slot->dev = dev;
	slot->ino = ino;
	slot->keys = *keys;
	return 0;
}

static int handshake_timeout(int64_t deadline)
{
	int64_t left = deadline < 0 ? HANDSHAKE_TIMEOUT_MS
				    : deadline - ckpt_cc_now_ms();

	if (left > HANDSHAKE_TIMEOUT_MS)
		left = HANDSHAKE_TIMEOUT_MS;
	return left < 1 ? 1 : (int)left;
}

static int fill_random(void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom((char *)buf + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
	}
	return 0;
}

/* Challenge, check the coordinator's proof, then prove ourselves. */
static int run_handshake(int fd, const char *addr, const char *secret,
			 int64_t deadline, struct ckpt_auth_session *keys)
{
	struct ckpt_msg_auth_challenge ch;
	struct ckpt_msg_auth_proof proof;
	struct ckpt_msg_auth_response resp;
	uint8_t want[CKPT_AUTH_MAC_LEN];
	uint32_t len = 0;
	int r;

	r = fill_random(ch.nonce, sizeof(ch.nonce));
	if (r == 0)
		r = ckpt_msg_send(fd, CKPT_MSG_AUTH_CHALLENGE, &ch, sizeof(ch));
	if (r == 0)
		r = ckpt_msg_recv(fd, &proof, sizeof(proof), &len,
				  handshake_timeout(deadline));
	if (r < 0 && r != -EPROTO && r != -EMSGSIZE)
		return r;
	if (r != CKPT_MSG_AUTH_PROOF || len != sizeof(proof)) {
		ckpt_cc_report("ckpt: ", addr, ": the peer does not answer the "
			       "ckpt authentication handshake",
			       " (not a ckpt coordinator of this version)");
		return -EPROTO;
	}
	ckpt_auth_derive(secret, CKPT_AUTH_COORDINATOR_PROOF, ch.nonce,
			 proof.nonce, want);
	if (!ckpt_mac_equal(want, proof.proof, sizeof(want))) {
		ckpt_cc_report("ckpt: ", addr, ": the peer did not prove it "
			       "knows the secret ($HOME/.ckpt/secret)",
			       "; not talking to it");
		return -EKEYREJECTED;
	}
	ckpt_auth_derive(secret, CKPT_AUTH_CLIENT_PROOF, ch.nonce,
			 proof.nonce, resp.proof);
	r = ckpt_msg_send(fd, CKPT_MSG_AUTH_RESPONSE, &resp, sizeof(resp));
	if (r < 0)
		return r;
	ckpt_auth_session_init(keys, secret, ch.nonce, proof.nonce, false);
	return 0;
}

int ckpt_cc_authenticate(int fd, const char *addr, int64_t deadline)
{
	char secret[CKPT_SECRET_LEN + 1];
	struct ckpt_auth_session keys;
	int r;

	ckpt_cc_session_forget(fd);
	r = ckpt_secret_load(secret, sizeof(secret));
	if (r < 0) {
		ckpt_cc_report("ckpt: cannot load the secret for TCP "
			       "connections ($HOME/.ckpt/secret) to ", addr,
			       "", "");
		return r;
	}
	r = run_handshake(fd, addr, secret, deadline, &keys);
	memset(secret, 0, sizeof(secret));
	if (r == 0)
		r = remember_session(fd, &keys);
	memset(&keys, 0, sizeof(keys));
	return r;
}
