/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The handshake that opens every connection between the ckpt_restarts of
 * two hosts (restart_tcp_hosts.c, restart_udp_hosts.c; docs/security.md,
 * "Meetings between hosts at restart"): each side proves it knows the
 * per-user secret ($HOME/.ckpt/secret) before anything of the
 * computation crosses, bound to the connection's two addresses and to
 * what the connection is for, so a program of another user that listens
 * or connects first gets nothing and hands nothing in.
 *
 *   connector -> listener   "ckptMA01", connector nonce (16 bytes)
 *   listener  -> connector  "ckptMA01", listener nonce, listener proof
 *   connector -> listener   connector proof
 *
 * proof = HMAC-SHA256(secret, label NUL || purpose length (1 byte) ||
 * purpose || connector address || listener address (each 16 bytes of
 * IPv6, IPv4 mapped, then the port) || connector nonce || listener
 * nonce), the label "ckpt-meet listener proof" or "ckpt-meet connector
 * proof". The listener proves first: nothing the connector says reaches
 * a listener that does not know the secret. Exactly these bytes are read:
 * what follows on the connection is the meeting's own.
 */
#ifndef CKPT_RESTART_MEET_AUTH_H
#define CKPT_RESTART_MEET_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define MEET_AUTH_NONCE_LEN 16
#define MEET_AUTH_PROOF_LEN 32
#define MEET_AUTH_PURPOSE_MAX 64
#define MEET_AUTH_MSG_MAX (8 + MEET_AUTH_NONCE_LEN + MEET_AUTH_PROOF_LEN)

/* One side's handshake on one connection, driven by meet_auth_step. */
struct meet_auth {
	int fd;
	int listens;
	int stage;			/* what is being sent or read */
	uint8_t purpose[MEET_AUTH_PURPOSE_MAX];
	size_t purpose_len;
	uint8_t nonce_c[MEET_AUTH_NONCE_LEN], nonce_l[MEET_AUTH_NONCE_LEN];
	uint8_t msg[MEET_AUTH_MSG_MAX];	/* the message sent or read now */
	size_t msg_len, done_len;
	const char *failed;		/* why, once it failed */
};

/* Start a handshake on the connected fd; purpose (at most
 * MEET_AUTH_PURPOSE_MAX bytes) names what the connection is for. 0, or
 * -1 with a->failed set. */
int meet_auth_start(struct meet_auth *a, int fd, int listens,
		    const void *purpose, size_t purpose_len);
/* The poll events the handshake waits for now. */
short meet_auth_events(const struct meet_auth *a);
/* Go as far as the socket allows without blocking: 1 done (the peer
 * proved it knows the secret), 0 not yet, -1 failed (a->failed says
 * why; close the connection). */
int meet_auth_step(struct meet_auth *a);
/* The whole handshake on fd, waiting at most until deadline_ms
 * (CLOCK_MONOTONIC milliseconds). 0, or -1 with *why set. */
int meet_auth_run(int fd, int listens, const void *purpose,
		  size_t purpose_len, long long deadline_ms, const char **why);

#endif
