/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ckpt_hash64: the checksum of image headers, metadata and memory extents.
 * Four independent 64-bit multiply-rotate lanes over 32-byte blocks, so it
 * runs near memory bandwidth; not cryptographic, it detects corruption and
 * truncation. Freestanding: used by the restart loader as well.
 * The algorithm is part of the image format (docs/image-format.md).
 */
#ifndef CKPT_HASH_H
#define CKPT_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CKPT_HASH_P1 0x9E3779B185EBCA87ULL
#define CKPT_HASH_P2 0xC2B2AE3D27D4EB4FULL
#define CKPT_HASH_P3 0x165667B19E3779F9ULL

static inline uint64_t ckpt_rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t ckpt_load64(const unsigned char *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, 8);
	return v;
}

static inline uint64_t ckpt_hash_lane(uint64_t acc, uint64_t v)
{
	acc += v * CKPT_HASH_P2;
	acc = ckpt_rotl64(acc, 31);
	return acc * CKPT_HASH_P1;
}

/* The bytes after the last 32-byte block, then the final mix. */
static inline uint64_t ckpt_hash_finish(uint64_t h, const unsigned char *p,
					size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = ckpt_rotl64(h ^ (p[i] * CKPT_HASH_P3), 11) * CKPT_HASH_P1;
	h ^= h >> 33;
	h *= CKPT_HASH_P2;
	h ^= h >> 29;
	h *= CKPT_HASH_P3;
	h ^= h >> 32;
	return h;
}

/* Hash len bytes; chain calls by passing the previous result as seed. */
static inline uint64_t ckpt_hash64(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t a = seed + CKPT_HASH_P1 + CKPT_HASH_P2, b = seed + CKPT_HASH_P2;
	uint64_t c = seed, d = seed - CKPT_HASH_P1;
	uint64_t h;
	size_t i;

	for (i = 0; i + 32 <= len; i += 32) {
		a = ckpt_hash_lane(a, ckpt_load64(p + i));
		b = ckpt_hash_lane(b, ckpt_load64(p + i + 8));
		c = ckpt_hash_lane(c, ckpt_load64(p + i + 16));
		d = ckpt_hash_lane(d, ckpt_load64(p + i + 24));
	}
	h = ckpt_rotl64(a, 1) + ckpt_rotl64(b, 7) + ckpt_rotl64(c, 12) +
	    ckpt_rotl64(d, 18) + (uint64_t)len;
	return ckpt_hash_finish(h, p + i, len - i);
}

/* ckpt_hash64 of data given in parts: init, update with each part in
 * order, final gives ckpt_hash64 of their concatenation (the metadata
 * block is hashed from its tables without assembling it). */
struct ckpt_hash_stream {
	uint64_t a, b, c, d, len;
	unsigned char tail[32];
	size_t ntail;
};

static inline void ckpt_hash_stream_init(struct ckpt_hash_stream *s,
					 uint64_t seed)
{
	s->a = seed + CKPT_HASH_P1 + CKPT_HASH_P2;
	s->b = seed + CKPT_HASH_P2;
	s->c = seed;
	s->d = seed - CKPT_HASH_P1;
	s->len = 0;
	s->ntail = 0;
}

static inline void ckpt_hash_stream_block(struct ckpt_hash_stream *s,
					  const unsigned char *p)
{
	s->a = ckpt_hash_lane(s->a, ckpt_load64(p));
	s->b = ckpt_hash_lane(s->b, ckpt_load64(p + 8));
	s->c = ckpt_hash_lane(s->c, ckpt_load64(p + 16));
	s->d = ckpt_hash_lane(s->d, ckpt_load64(p + 24));
}

static inline void ckpt_hash_stream_update(struct ckpt_hash_stream *s,
					   const void *data, size_t len)
{
	const unsigned char *p = data;

	s->len += len;
	while (s->ntail && len) {
		s->tail[s->ntail++] = *p++;
		len--;
		if (s->ntail == 32) {
			ckpt_hash_stream_block(s, s->tail);
			s->ntail = 0;
		}
	}
	for (; len >= 32; p += 32, len -= 32)
		ckpt_hash_stream_block(s, p);
	for (; len; len--)
		s->tail[s->ntail++] = *p++;
}

static inline uint64_t ckpt_hash_stream_final(const struct ckpt_hash_stream *s)
{
	uint64_t h = ckpt_rotl64(s->a, 1) + ckpt_rotl64(s->b, 7) +
		     ckpt_rotl64(s->c, 12) + ckpt_rotl64(s->d, 18) + s->len;

	return ckpt_hash_finish(h, s->tail, s->ntail);
}

#endif /* CKPT_HASH_H */
