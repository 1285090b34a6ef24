// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Control characters out of peer-supplied text (sanitize.h).
 */
#include <stdio.h>
#include <string.h>

#include "sanitize.h"

size_t ckpt_control_char_len(const unsigned char *s, size_t len)
{
	if (!len)
		return 0;
	if (s[0] < 0x20 || s[0] == 0x7f)
		return 1;
	/* U+0080..U+009F: CSI and friends on terminals that honour C1 */
	if (s[0] == 0xc2 && len > 1 && s[1] >= 0x80 && s[1] <= 0x9f)
		return 2;
	return 0;
}

static bool kept(unsigned char ch, bool keep_lines)
{
	return keep_lines && (ch == '\n' || ch == '\t');
}

void ckpt_sanitize_in_place(char *s, bool keep_lines)
{
	size_t len = strlen(s);

	for (size_t i = 0; i < len; i++) {
		size_t n = ckpt_control_char_len((unsigned char *)s + i,
						 len - i);

		if (!n || kept((unsigned char)s[i], keep_lines))
			continue;
		memset(s + i, '?', n);
		i += n - 1;
	}
}

void ckpt_sanitize_copy(char *dst, size_t dstlen, const char *src,
			size_t len, bool keep_lines)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0;

	if (!dstlen)
		return;
	for (size_t i = 0; i < len && o + 1 < dstlen; i++) {
		size_t n = ckpt_control_char_len(s + i, len - i);

		if (!n || kept(s[i], keep_lines)) {
			dst[o++] = (char)s[i];
			continue;
		}
		for (size_t k = 0; k < n && o + 5 <= dstlen; k++, o += 4)
			snprintf(dst + o, 5, "\\x%02x", s[i + k]);
		if (o + 5 > dstlen)
			break;
		i += n - 1;
	}
	dst[o] = '\0';
}
