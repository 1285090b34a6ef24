/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writing JSON for the tools' --json output (ckpt_check, ckpt_inspect):
 * strings escaped per RFC 8259, and a comma before every member but the
 * first of an object or array. The caller keeps the nesting; a
 * struct json_out tracks whether a separator is due.
 */
#ifndef CKPT_JSON_OUT_H
#define CKPT_JSON_OUT_H

#include <stdint.h>
#include <stdio.h>

struct json_out {
	FILE *f;
	int need_comma;
};

/* A JSON string; bytes that are not printable ASCII are escaped as
 * \u00XX, so any name (a thread's, a path) gives valid JSON. */
static inline void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static inline void json_sep(struct json_out *j)
{
	if (j->need_comma)
		fputc(',', j->f);
	j->need_comma = 1;
}

/* Open an object or array: as a member ("key": {) when key is set. */
static inline void json_open(struct json_out *j, const char *key, char c)
{
	json_sep(j);
	if (key) {
		json_string(j->f, key);
		fputc(':', j->f);
	}
	fputc(c, j->f);
	j->need_comma = 0;
}

static inline void json_close(struct json_out *j, char c)
{
	fputc(c, j->f);
	j->need_comma = 1;
}

static inline void json_key(struct json_out *j, const char *key)
{
	json_sep(j);
	if (key) {
		json_string(j->f, key);
		fputc(':', j->f);
	}
}

static inline void json_str(struct json_out *j, const char *key,
			    const char *value)
{
	json_key(j, key);
	if (value)
		json_string(j->f, value);
	else
		fputs("null", j->f);
}

static inline void json_u64(struct json_out *j, const char *key,
			    uint64_t value)
{
	json_key(j, key);
	fprintf(j->f, "%llu", (unsigned long long)value);
}

static inline void json_i64(struct json_out *j, const char *key,
			    int64_t value)
{
	json_key(j, key);
	fprintf(j->f, "%lld", (long long)value);
}

static inline void json_bool(struct json_out *j, const char *key, int value)
{
	json_key(j, key);
	fputs(value ? "true" : "false", j->f);
}

/* Addresses as "0x..." strings: JSON numbers lose precision above 2^53
 * in most readers. */
static inline void json_hex(struct json_out *j, const char *key,
			    uint64_t value)
{
	json_key(j, key);
	fprintf(j->f, "\"%#llx\"", (unsigned long long)value);
}

#endif /* CKPT_JSON_OUT_H */
