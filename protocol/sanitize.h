/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Text a peer sent (program and host names, failure messages, what a
 * restart will not restore) reaches terminals and logs: control
 * characters in it could move the cursor, rewrite the screen or forge log
 * lines. These make such text inert.
 */
#ifndef CKPT_SANITIZE_H
#define CKPT_SANITIZE_H

#include <stdbool.h>
#include <stddef.h>

/* A control character (C0, DEL, or the UTF-8 encoding of a C1 one) at
 * s[0..len): how many bytes it takes, 0 when s starts with none. */
size_t ckpt_control_char_len(const unsigned char *s, size_t len);

/* Replace every control character of the NUL-terminated s with '?', in
 * place; keep_lines keeps '\n' and '\t'. */
void ckpt_sanitize_in_place(char *s, bool keep_lines);

/* Copy src[0..len) to dst (always NUL-terminated, truncated to dstlen),
 * each control byte written as \xHH; keep_lines keeps '\n' and '\t'. */
void ckpt_sanitize_copy(char *dst, size_t dstlen, const char *src,
			size_t len, bool keep_lines);

#endif /* CKPT_SANITIZE_H */
