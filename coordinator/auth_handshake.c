// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Coordinator side of the TCP handshake and of the MAC on every later
 * message (docs/protocol.md, "Authentication"; docs/security.md,
 * "Coordinator connections"). A TCP connection says nothing but
 * AUTH_CHALLENGE until it has proved it knows the secret; the coordinator
 * proves itself first, so a client never talks to an impostor. Unix
 * connections are vouched for by SO_PEERCRED (listener.c) and skip all
 * of this.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "coordinator.h"

bool auth_needed(const struct conn *c)
{
	return !c->local_peer && c->auth.state != AUTH_DONE;
}

size_t auth_trailer_len(const struct conn *c)
{
	return c->auth.state == AUTH_DONE ? CKPT_AUTH_MAC_LEN : 0;
}

void auth_append_trailer(struct conn *c, const struct ckpt_msg_header *hdr,
			 const void *payload)
{
	uint8_t mac[CKPT_AUTH_MAC_LEN];

	if (c->auth.state != AUTH_DONE)
		return;
	ckpt_auth_seal(&c->auth.keys, hdr, payload, mac);
	buf_append(&c->out, mac, sizeof(mac));
}

int auth_check_trailer(struct conn *c, const struct ckpt_msg_header *hdr,
		       const char *payload)
{
	if (c->auth.state != AUTH_DONE)
		return 0;
	return ckpt_auth_open(&c->auth.keys, hdr, payload,
			      (const uint8_t *)payload + hdr->len);
}

static void refuse(struct conn *c, const char *why, unsigned int type)
{
	coord_log("%s: closing a TCP connection that %s (message type %u; "
		  "only ckpt of protocol version %d authenticates without "
		  "sending the secret)", c->peer, why, type,
		  CKPT_PROTOCOL_VERSION);
	c->eof = true;
}

/* Our nonce and our proof; the client checks it before it says more. */
static void answer_challenge(struct coordinator *co, struct conn *c,
			     const char *p)
{
	struct ckpt_msg_auth_challenge ch;
	struct ckpt_msg_auth_proof proof;

	memcpy(&ch, p, sizeof(ch));
	if (getrandom(proof.nonce, sizeof(proof.nonce), 0) !=
	    (ssize_t)sizeof(proof.nonce)) {
		coord_log("%s: cannot make a nonce: %s; closing", c->peer,
			  strerror(errno));
		c->eof = true;
		return;
	}
	memcpy(c->auth.client_nonce, ch.nonce, sizeof(ch.nonce));
	memcpy(c->auth.coord_nonce, proof.nonce, sizeof(proof.nonce));
	ckpt_auth_derive(co->secret, CKPT_AUTH_COORDINATOR_PROOF, ch.nonce,
			 proof.nonce, proof.proof);
	conn_send(c, CKPT_MSG_AUTH_PROOF, &proof, sizeof(proof));
	c->auth.state = AUTH_PROVEN_OURS;
}

static void check_response(struct coordinator *co, struct conn *c,
			   const char *p)
{
	struct ckpt_msg_auth_response resp;
	uint8_t want[CKPT_AUTH_MAC_LEN];

	memcpy(&resp, p, sizeof(resp));
	ckpt_auth_derive(co->secret, CKPT_AUTH_CLIENT_PROOF,
			 c->auth.client_nonce, c->auth.coord_nonce, want);
	if (!ckpt_mac_equal(want, resp.proof, sizeof(want))) {
		coord_log("%s: rejected a TCP connection: it did not prove it "
			  "knows the secret (is $HOME/.ckpt/secret the same "
			  "as the coordinator's?)", c->peer);
		c->eof = true;
		return;
	}
	ckpt_auth_session_init(&c->auth.keys, co->secret,
			       c->auth.client_nonce, c->auth.coord_nonce, true);
	c->auth.state = AUTH_DONE;
}

void auth_handle_msg(struct coordinator *co, struct conn *c,
		     const struct ckpt_msg_header *hdr, const char *p)
{
	if (c->auth.state == AUTH_WAIT_CHALLENGE &&
	    hdr->type == CKPT_MSG_AUTH_CHALLENGE &&
	    hdr->len == sizeof(struct ckpt_msg_auth_challenge))
		answer_challenge(co, c, p);
	else if (c->auth.state == AUTH_PROVEN_OURS &&
		 hdr->type == CKPT_MSG_AUTH_RESPONSE &&
		 hdr->len == sizeof(struct ckpt_msg_auth_response))
		check_response(co, c, p);
	else
		refuse(c, c->auth.state == AUTH_WAIT_CHALLENGE ?
			  "did not start with the authentication handshake" :
			  "broke off the authentication handshake",
		       hdr->type);
}
