/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Authentication of TCP connections to a coordinator (docs/security.md,
 * "Coordinator connections"; docs/protocol.md, "Authentication"): a
 * freestanding SHA-256/HMAC-SHA256 (client_sha256.c), the proofs and
 * per-connection keys both sides derive from the per-user secret and two
 * nonces, and the MAC that binds every later message to that handshake
 * (client_auth_mac.c). No malloc, no stdio: libckpt uses it while the
 * application's threads are stopped.
 */
#ifndef CKPT_COORD_AUTH_H
#define CKPT_COORD_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt/protocol.h"

#define CKPT_SHA256_LEN 32

struct ckpt_sha256 {
	uint32_t state[8];
	uint64_t bytes;
	unsigned char block[64];
	size_t fill;
};

struct ckpt_hmac {
	struct ckpt_sha256 inner;
	unsigned char outer_key[64];
};

void ckpt_sha256_init(struct ckpt_sha256 *s);
void ckpt_sha256_update(struct ckpt_sha256 *s, const void *data, size_t len);
void ckpt_sha256_final(struct ckpt_sha256 *s,
		       unsigned char out[CKPT_SHA256_LEN]);
void ckpt_hmac_init(struct ckpt_hmac *h, const void *key, size_t key_len);
void ckpt_hmac_update(struct ckpt_hmac *h, const void *data, size_t len);
void ckpt_hmac_final(struct ckpt_hmac *h, unsigned char out[CKPT_SHA256_LEN]);
/* 1 if equal; takes the same time wherever they differ. */
int ckpt_mac_equal(const unsigned char *a, const unsigned char *b, size_t n);

/* What a side proves or derives; each a distinct label so no value one
 * side computes can be reflected as another. */
enum ckpt_auth_label {
	CKPT_AUTH_COORDINATOR_PROOF,
	CKPT_AUTH_CLIENT_PROOF,
	CKPT_AUTH_KEY_TO_COORDINATOR,
	CKPT_AUTH_KEY_TO_CLIENT,
};

/* HMAC-SHA256(secret, label text || client nonce || coordinator nonce). */
void ckpt_auth_derive(const char *secret, enum ckpt_auth_label label,
		      const uint8_t client_nonce[CKPT_AUTH_NONCE_LEN],
		      const uint8_t coord_nonce[CKPT_AUTH_NONCE_LEN],
		      uint8_t out[CKPT_AUTH_MAC_LEN]);

/* One authenticated connection: a key and a message counter for each
 * direction. */
struct ckpt_auth_session {
	uint8_t send_key[CKPT_AUTH_MAC_LEN];
	uint8_t recv_key[CKPT_AUTH_MAC_LEN];
	uint64_t send_seq;
	uint64_t recv_seq;
};

void ckpt_auth_session_init(struct ckpt_auth_session *s, const char *secret,
			    const uint8_t client_nonce[CKPT_AUTH_NONCE_LEN],
			    const uint8_t coord_nonce[CKPT_AUTH_NONCE_LEN],
			    bool coordinator_side);
/* The trailer of the next message sent: HMAC(send key, seq || header ||
 * payload); advances the send counter. */
void ckpt_auth_seal(struct ckpt_auth_session *s,
		    const struct ckpt_msg_header *hdr, const void *payload,
		    uint8_t mac[CKPT_AUTH_MAC_LEN]);
/* Check the trailer of the next message received: 0, or -EBADMSG (the
 * connection must be closed). Advances the receive counter. */
int ckpt_auth_open(struct ckpt_auth_session *s,
		   const struct ckpt_msg_header *hdr, const void *payload,
		   const uint8_t mac[CKPT_AUTH_MAC_LEN]);

/* The same, fed piecewise: the payload goes to ckpt_hmac_update(h), the
 * final value is compared with the trailer. Advances the counter. */
void ckpt_auth_open_begin(struct ckpt_auth_session *s,
			  const struct ckpt_msg_header *hdr,
			  struct ckpt_hmac *h);

#endif /* CKPT_COORD_AUTH_H */
