// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tiny string and memory helpers. memcpy/memset/memmove/memcmp must exist
 * in freestanding code because the compiler emits calls to them; the
 * build passes -fno-tree-loop-distribute-patterns so these loops are not
 * turned back into calls to themselves.
 */
#include "loader.h"

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d < s)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;

	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t str_len(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

int str_eq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

int str_starts(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return 0;
	return 1;
}

/* Copy with truncation; returns the length of src (>= cap: truncated). */
size_t str_copy(char *dst, const char *src, size_t cap)
{
	size_t n = str_len(src);
	size_t k = n < cap ? n : cap - 1;

	memcpy(dst, src, k);
	dst[k] = '\0';
	return n;
}

/* A whole string as an unsigned number in base 10 or 16; 0 or -EINVAL. */
int parse_u64(const char *s, unsigned base, uint64_t *out)
{
	uint64_t v = 0;
	unsigned d;

	if (!*s)
		return -22;
	for (; *s; s++) {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else
			return -22;
		if (d >= base || v > (~0ULL - d) / base)
			return -22;
		v = v * base + d;
	}
	*out = v;
	return 0;
}
