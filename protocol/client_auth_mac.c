// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The values both ends of a TCP connection derive from the per-user secret
 * and the two nonces of its handshake, and the MAC over every message
 * that follows (docs/protocol.md, "Authentication").
 */
#include <errno.h>
#include <string.h>

#include "auth.h"

static const char *const label_text[] = {
	[CKPT_AUTH_COORDINATOR_PROOF] = "ckpt-v2 coordinator proof",
	[CKPT_AUTH_CLIENT_PROOF] = "ckpt-v2 client proof",
	[CKPT_AUTH_KEY_TO_COORDINATOR] = "ckpt-v2 key client to coordinator",
	[CKPT_AUTH_KEY_TO_CLIENT] = "ckpt-v2 key coordinator to client",
};

void ckpt_auth_derive(const char *secret, enum ckpt_auth_label label,
		      const uint8_t client_nonce[CKPT_AUTH_NONCE_LEN],
		      const uint8_t coord_nonce[CKPT_AUTH_NONCE_LEN],
		      uint8_t out[CKPT_AUTH_MAC_LEN])
{
	const char *text = label_text[label];
	struct ckpt_hmac h;

	ckpt_hmac_init(&h, secret, strlen(secret));
	/* the label's NUL ends it: no label is a prefix of another's input */
	ckpt_hmac_update(&h, text, strlen(text) + 1);
	ckpt_hmac_update(&h, client_nonce, CKPT_AUTH_NONCE_LEN);
	ckpt_hmac_update(&h, coord_nonce, CKPT_AUTH_NONCE_LEN);
	ckpt_hmac_final(&h, out);
}

void ckpt_auth_session_init(struct ckpt_auth_session *s, const char *secret,
			    const uint8_t client_nonce[CKPT_AUTH_NONCE_LEN],
			    const uint8_t coord_nonce[CKPT_AUTH_NONCE_LEN],
			    bool coordinator_side)
{
	enum ckpt_auth_label to_coord = CKPT_AUTH_KEY_TO_COORDINATOR;
	enum ckpt_auth_label to_client = CKPT_AUTH_KEY_TO_CLIENT;

	ckpt_auth_derive(secret, coordinator_side ? to_client : to_coord,
			 client_nonce, coord_nonce, s->send_key);
	ckpt_auth_derive(secret, coordinator_side ? to_coord : to_client,
			 client_nonce, coord_nonce, s->recv_key);
	s->send_seq = 0;
	s->recv_seq = 0;
}

static void message_mac_begin(const uint8_t key[CKPT_AUTH_MAC_LEN],
			      uint64_t seq, const struct ckpt_msg_header *hdr,
			      struct ckpt_hmac *h)
{
	uint8_t seq_le[8];

	for (int i = 0; i < 8; i++)
		seq_le[i] = (uint8_t)(seq >> (8 * i));
	ckpt_hmac_init(h, key, CKPT_AUTH_MAC_LEN);
	ckpt_hmac_update(h, seq_le, sizeof(seq_le));
	ckpt_hmac_update(h, hdr, sizeof(*hdr));
}

static void message_mac(const uint8_t key[CKPT_AUTH_MAC_LEN], uint64_t seq,
			const struct ckpt_msg_header *hdr, const void *payload,
			uint8_t out[CKPT_AUTH_MAC_LEN])
{
	struct ckpt_hmac h;

	message_mac_begin(key, seq, hdr, &h);
	if (hdr->len)
		ckpt_hmac_update(&h, payload, hdr->len);
	ckpt_hmac_final(&h, out);
}

void ckpt_auth_open_begin(struct ckpt_auth_session *s,
			  const struct ckpt_msg_header *hdr,
			  struct ckpt_hmac *h)
{
	message_mac_begin(s->recv_key, s->recv_seq++, hdr, h);
}

void ckpt_auth_seal(struct ckpt_auth_session *s,
		    const struct ckpt_msg_header *hdr, const void *payload,
		    uint8_t mac[CKPT_AUTH_MAC_LEN])
{
	message_mac(s->send_key, s->send_seq++, hdr, payload, mac);
}

int ckpt_auth_open(struct ckpt_auth_session *s,
		   const struct ckpt_msg_header *hdr, const void *payload,
		   const uint8_t mac[CKPT_AUTH_MAC_LEN])
{
	uint8_t want[CKPT_AUTH_MAC_LEN];

	message_mac(s->recv_key, s->recv_seq++, hdr, payload, want);
	return ckpt_mac_equal(want, mac, sizeof(want)) ? 0 : -EBADMSG;
}
