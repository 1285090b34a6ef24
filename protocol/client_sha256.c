// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for the coordinator
 * handshake and message MACs (protocol/client_auth.c). Freestanding:
 * no malloc, no stdio, no libc beyond memcpy/memset, so libckpt may use it
 * while the application's threads are stopped.
 */
#include <string.h>

#include "auth.h"

static const uint32_t round_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror32(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void compress_block(uint32_t st[8], const unsigned char *blk)
{
	uint32_t w[64], v[8];
	int i;

	for (i = 0; i < 16; i++)
		w[i] = load_be32(blk + 4 * i);
	for (; i < 64; i++) {
		uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^
			      (w[i - 15] >> 3);
		uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^
			      (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(v, st, sizeof(v));
	for (i = 0; i < 64; i++) {
		uint32_t s1 = ror32(v[4], 6) ^ ror32(v[4], 11) ^
			      ror32(v[4], 25);
		uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
		uint32_t t1 = v[7] + s1 + ch + round_k[i] + w[i];
		uint32_t s0 = ror32(v[0], 2) ^ ror32(v[0], 13) ^
			      ror32(v[0], 22);
		uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);

		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + s0 + maj;
	}
	for (i = 0; i < 8; i++)
		st[i] += v[i];
}

void ckpt_sha256_init(struct ckpt_sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->state, iv, sizeof(iv));
	s->bytes = 0;
	s->fill = 0;
}

void ckpt_sha256_update(struct ckpt_sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	s->bytes += len;
	while (len) {
		size_t n = sizeof(s->block) - s->fill;

		if (n > len)
			n = len;
		memcpy(s->block + s->fill, p, n);
		s->fill += n;
		p += n;
		len -= n;
		if (s->fill == sizeof(s->block)) {
			compress_block(s->state, s->block);
			s->fill = 0;
		}
	}
}

void ckpt_sha256_final(struct ckpt_sha256 *s,
		       unsigned char out[CKPT_SHA256_LEN])
{
	uint64_t bits = s->bytes * 8;
	unsigned char pad = 0x80, len_be[8];
	int i;

	for (i = 0; i < 8; i++)
		len_be[i] = (unsigned char)(bits >> (56 - 8 * i));
	ckpt_sha256_update(s, &pad, 1);
	pad = 0;
	while (s->fill != 56)
		ckpt_sha256_update(s, &pad, 1);
	ckpt_sha256_update(s, len_be, sizeof(len_be));
	for (i = 0; i < 8; i++)
		store_be32(out + 4 * i, s->state[i]);
	memset(s, 0, sizeof(*s));
}

/* key is padded (or first hashed, if longer than a block) to 64 bytes and
 * XORed with ipad/opad. */
void ckpt_hmac_init(struct ckpt_hmac *h, const void *key, size_t key_len)
{
	unsigned char block[64] = { 0 }, inner[64];
	size_t i;

	if (key_len > sizeof(block)) {
		ckpt_sha256_init(&h->inner);
		ckpt_sha256_update(&h->inner, key, key_len);
		ckpt_sha256_final(&h->inner, block);
	} else {
		memcpy(block, key, key_len);
	}
	for (i = 0; i < sizeof(block); i++) {
		inner[i] = block[i] ^ 0x36;
		h->outer_key[i] = block[i] ^ 0x5c;
	}
	ckpt_sha256_init(&h->inner);
	ckpt_sha256_update(&h->inner, inner, sizeof(inner));
	memset(block, 0, sizeof(block));
	memset(inner, 0, sizeof(inner));
}

void ckpt_hmac_update(struct ckpt_hmac *h, const void *data, size_t len)
{
	ckpt_sha256_update(&h->inner, data, len);
}

void ckpt_hmac_final(struct ckpt_hmac *h, unsigned char out[CKPT_SHA256_LEN])
{
	unsigned char inner[CKPT_SHA256_LEN];
	struct ckpt_sha256 outer;

	ckpt_sha256_final(&h->inner, inner);
	ckpt_sha256_init(&outer);
	ckpt_sha256_update(&outer, h->outer_key, sizeof(h->outer_key));
	ckpt_sha256_update(&outer, inner, sizeof(inner));
	ckpt_sha256_final(&outer, out);
	memset(h, 0, sizeof(*h));
}

int ckpt_mac_equal(const unsigned char *a, const unsigned char *b, size_t n)
{
	unsigned char diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}
