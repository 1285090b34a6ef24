// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The handshake between two hosts' ckpt_restarts (meet_auth.h has the
 * messages and the proofs). A small state machine per connection, so
 * that a side with several connections drives them all from one poll
 * (restart_udp_hosts.c) and no two hosts wait for each other in turn.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "../protocol/auth.h"
#include "ckpt/coord_client.h"
#include "meet_auth.h"
#include "restart_tcp.h"

static const char meet_magic[8] = "ckptMA01";
static const char no_secret[] =
	"cannot read this user's secret ($HOME/.ckpt/secret)";

enum meet_stage {
	SEND_HELLO,		/* connector */
	READ_ANSWER,		/* connector: the listener's nonce and proof */
	SEND_PROOF,		/* connector */
	READ_HELLO,		/* listener */
	SEND_ANSWER,		/* listener */
	READ_PROOF,		/* listener: the connector's proof */
	MET,
};

/* The per-user secret, read once per ckpt_restart. */
static const char *meet_secret(void)
{
	static char secret[CKPT_SECRET_LEN + 1];
	static int state;	/* 0 not read, 1 read, -1 failed */

	if (!state)
		state = ckpt_secret_load(secret, sizeof(secret)) < 0 ? -1 : 1;
	return state > 0 ? secret : NULL;
}

/* Connector address, then listener address, as both sides see them. */
static int connection_addresses(int fd, int listens, uint8_t out[36])
{
	struct sockaddr_storage own, peer;
	socklen_t own_len = sizeof(own), peer_len = sizeof(peer);

	if (getsockname(fd, (void *)&own, &own_len) < 0 ||
	    getpeername(fd, (void *)&peer, &peer_len) < 0)
		return -errno;
	if (own.ss_family != AF_INET && own.ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	socket_canonical((const uint8_t *)(listens ? &peer : &own), out);
	socket_canonical((const uint8_t *)(listens ? &own : &peer), out + 18);
	return 0;
}

static int proof_of(const struct meet_auth *a, int of_listener,
		    uint8_t out[MEET_AUTH_PROOF_LEN])
{
	static const char listener_label[] = "ckpt-meet listener proof";
	static const char connector_label[] = "ckpt-meet connector proof";
	const char *secret = meet_secret();
	uint8_t addrs[36], plen = (uint8_t)a->purpose_len;
	struct ckpt_hmac h;

	if (!secret || connection_addresses(a->fd, a->listens, addrs) < 0)
		return -1;
	ckpt_hmac_init(&h, secret, strlen(secret));
	/* each label with its NUL: neither is a prefix of the other's input */
	if (of_listener)
		ckpt_hmac_update(&h, listener_label, sizeof(listener_label));
	else
		ckpt_hmac_update(&h, connector_label, sizeof(connector_label));
	ckpt_hmac_update(&h, &plen, 1);
	ckpt_hmac_update(&h, a->purpose, a->purpose_len);
	ckpt_hmac_update(&h, addrs, sizeof(addrs));
	ckpt_hmac_update(&h, a->nonce_c, MEET_AUTH_NONCE_LEN);
	ckpt_hmac_update(&h, a->nonce_l, MEET_AUTH_NONCE_LEN);
	ckpt_hmac_final(&h, out);
	return 0;
}

static int fail(struct meet_auth *a, const char *why)
{
	a->failed = why;
	return -1;
}

/* proof_of, or the failure said. */
static int prove(struct meet_auth *a, int of_listener,
		 uint8_t out[MEET_AUTH_PROOF_LEN])
{
	return proof_of(a, of_listener, out) < 0 ? fail(a, no_secret) : 0;
}

static int fill_nonce(uint8_t nonce[MEET_AUTH_NONCE_LEN])
{
	ssize_t n;

	do {
		n = getrandom(nonce, MEET_AUTH_NONCE_LEN, 0);
	} while (n < 0 && errno == EINTR);
	return n == MEET_AUTH_NONCE_LEN ? 0 : -1;
}

/* The next message: to send (built here) or to read (its length). */
static int enter_stage(struct meet_auth *a, enum meet_stage stage)
{
	uint8_t *m = a->msg;

	a->stage = stage;
	a->done_len = 0;
	switch (stage) {
	case SEND_HELLO:
		memcpy(m, meet_magic, 8);
		memcpy(m + 8, a->nonce_c, MEET_AUTH_NONCE_LEN);
		a->msg_len = 8 + MEET_AUTH_NONCE_LEN;
		return 0;
	case READ_HELLO:
		a->msg_len = 8 + MEET_AUTH_NONCE_LEN;
		return 0;
	case SEND_ANSWER:
		memcpy(m, meet_magic, 8);
		memcpy(m + 8, a->nonce_l, MEET_AUTH_NONCE_LEN);
		a->msg_len = MEET_AUTH_MSG_MAX;
		return prove(a, 1, m + 8 + MEET_AUTH_NONCE_LEN);
	case READ_ANSWER:
		a->msg_len = MEET_AUTH_MSG_MAX;
		return 0;
	case SEND_PROOF:
		a->msg_len = MEET_AUTH_PROOF_LEN;
		return prove(a, 0, m);
	case READ_PROOF:
		a->msg_len = MEET_AUTH_PROOF_LEN;
		return 0;
	case MET:
		a->msg_len = 0;
		return 0;
	}
	return fail(a, "internal error");
}

/* Check what the peer sent, whole; then the next stage. */
static int take_message(struct meet_auth *a)
{
	static const char *const not_proven =
		"it did not prove it knows this user's secret (not a "
		"ckpt_restart of this user, or $HOME/.ckpt/secret differs "
		"between the hosts)";
	uint8_t want[MEET_AUTH_PROOF_LEN];
	const uint8_t *proof;

	switch (a->stage) {
	case READ_HELLO:
		if (memcmp(a->msg, meet_magic, 8))
			return fail(a, "it did not open with the handshake");
		memcpy(a->nonce_c, a->msg + 8, MEET_AUTH_NONCE_LEN);
		return enter_stage(a, SEND_ANSWER);
	case READ_ANSWER:
		if (memcmp(a->msg, meet_magic, 8))
			return fail(a, not_proven);
		memcpy(a->nonce_l, a->msg + 8, MEET_AUTH_NONCE_LEN);
		proof = a->msg + 8 + MEET_AUTH_NONCE_LEN;
		if (prove(a, 1, want) < 0)
			return -1;
		if (!ckpt_mac_equal(want, proof, sizeof(want)))
			return fail(a, not_proven);
		return enter_stage(a, SEND_PROOF);
	case READ_PROOF:
		if (prove(a, 0, want) < 0)
			return -1;
		if (!ckpt_mac_equal(want, a->msg, sizeof(want)))
			return fail(a, not_proven);
		return enter_stage(a, MET);
	default:
		return fail(a, "internal error");
	}
}

int meet_auth_start(struct meet_auth *a, int fd, int listens,
		    const void *purpose, size_t purpose_len)
{
	memset(a, 0, sizeof(*a));
	a->fd = fd;
	a->listens = listens;
	if (purpose_len > sizeof(a->purpose))
		return fail(a, "internal error: purpose too long");
	memcpy(a->purpose, purpose, purpose_len);
	a->purpose_len = purpose_len;
	if (!meet_secret())
		return fail(a, no_secret);
	if (fill_nonce(listens ? a->nonce_l : a->nonce_c) < 0)
		return fail(a, "no random bytes for the handshake");
	return enter_stage(a, listens ? READ_HELLO : SEND_HELLO);
}

short meet_auth_events(const struct meet_auth *a)
{
	switch (a->stage) {
	case SEND_HELLO:
	case SEND_ANSWER:
	case SEND_PROOF:
		return POLLOUT;
	case MET:
		return 0;
	default:
		return POLLIN;
	}
}

/* One send or receive of the current message; 1 when it is whole. */
static int move_bytes(struct meet_auth *a)
{
	int sending = meet_auth_events(a) == POLLOUT;
	uint8_t *p = a->msg + a->done_len;
	size_t left = a->msg_len - a->done_len;
	ssize_t n;

	do {
		n = sending ? send(a->fd, p, left, MSG_DONTWAIT | MSG_NOSIGNAL) :
			      recv(a->fd, p, left, MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n == 0 && !sending)
		return fail(a, "it closed the connection during the handshake");
	if (n < 0 && errno != EAGAIN)
		return fail(a, sending ? "sending the handshake failed" :
				       "reading the handshake failed");
	if (n > 0)
		a->done_len += n;
	return a->done_len == a->msg_len;
}

int meet_auth_step(struct meet_auth *a)
{
	while (!a->failed && a->stage != MET) {
		int r = move_bytes(a);

		if (r <= 0)
			return r;
		if (meet_auth_events(a) == POLLOUT) {
			if (enter_stage(a, a->stage == SEND_HELLO ? READ_ANSWER :
					   a->stage == SEND_ANSWER ? READ_PROOF :
					   MET) < 0)
				return -1;
		} else if (take_message(a) < 0) {
			return -1;
		}
	}
	return a->failed ? -1 : 1;
}

static long long meet_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int meet_auth_run(int fd, int listens, const void *purpose,
		  size_t purpose_len, long long deadline_ms, const char **why)
{
	struct meet_auth a;
	int r = meet_auth_start(&a, fd, listens, purpose, purpose_len);

	while (r == 0 && (r = meet_auth_step(&a)) == 0) {
		long long left = deadline_ms - meet_now_ms();
		struct pollfd p = { fd, meet_auth_events(&a), 0 };

		if (left <= 0 || poll(&p, 1, (int)left) == 0) {
			a.failed = "it did not answer the handshake in time";
			r = -1;
		} else if (p.revents & POLLNVAL) {
			a.failed = "internal error: not a socket";
			r = -1;
		}
	}
	*why = a.failed;
	return r < 0 ? -1 : 0;
}
