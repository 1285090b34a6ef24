// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Small helpers for the coordinator client: bounded strings, clocks, waits,
 * private directories and path joining, all without malloc or stdio.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client_internal.h"

void ckpt_cc_str_init(struct ckpt_cc_str *s, char *buf, size_t cap)
{
	s->buf = buf;
	s->cap = cap;
	s->len = 0;
	s->truncated = false;
	if (cap)
		buf[0] = '\0';
}

void ckpt_cc_str_add(struct ckpt_cc_str *s, const char *text)
{
	size_t n = strlen(text);

	if (!s->cap)
		return;
	if (s->len + n >= s->cap) {
		n = s->cap - 1 - s->len;
		s->truncated = true;
	}
	memcpy(s->buf + s->len, text, n);
	s->len += n;
	s->buf[s->len] = '\0';
}

void ckpt_cc_str_add_u64(struct ckpt_cc_str *s, uint64_t v)
{
	char digits[24];
	int i = sizeof(digits) - 1;

	digits[i] = '\0';
	do {
		digits[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	ckpt_cc_str_add(s, digits + i);
}

void ckpt_cc_str_add_i64(struct ckpt_cc_str *s, int64_t v)
{
	if (v < 0) {
		ckpt_cc_str_add(s, "-");
		ckpt_cc_str_add_u64(s, (uint64_t)0 - (uint64_t)v);
		return;
	}
	ckpt_cc_str_add_u64(s, (uint64_t)v);
}

size_t ckpt_cc_strlcpy(char *dst, const char *src, size_t cap)
{
	size_t n = strlen(src);

	if (cap) {
		size_t copy = n < cap ? n : cap - 1;

		memcpy(dst, src, copy);
		dst[copy] = '\0';
	}
	return n;
}

/* libckpt defines these two (libckpt-preload/log.c); in the tools and
 * the coordinator they are absent and the weak references are null. */
int ckpt_move_fd_high(int fd) __attribute__((weak));
void ckpt_mark_own_fd(int fd, int own) __attribute__((weak));

int ckpt_cc_keep_fd(int fd)
{
	return fd >= 0 && ckpt_move_fd_high ? ckpt_move_fd_high(fd) : fd;
}

void ckpt_cc_close_fd(int fd)
{
	if (ckpt_mark_own_fd)
		ckpt_mark_own_fd(fd, 0);
	close(fd);
}

int64_t ckpt_cc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ckpt_cc_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return -1;
	return ckpt_cc_now_ms() + timeout_ms;
}

int ckpt_cc_wait_fd(int fd, short events, int64_t deadline_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };

	for (;;) {
		int timeout = -1;
		int n;

		if (deadline_ms >= 0) {
			int64_t left = deadline_ms - ckpt_cc_now_ms();

			timeout = left < 0 ? 0 : (left > 1 << 30 ? 1 << 30
							       : (int)left);
		}
		n = poll(&pfd, 1, timeout);
		if (n > 0)
			return 0;
		if (n == 0) {
			if (deadline_ms >= 0 && ckpt_cc_now_ms() >= deadline_ms)
				return -ETIMEDOUT;
			continue;
		}
		if (errno != EINTR)
			return -errno;
	}
}

void ckpt_cc_report(const char *a, const char *b, const char *c,
		    const char *d)
{
	char line[1024];
	struct ckpt_cc_str s;
	ssize_t n;

	ckpt_cc_str_init(&s, line, sizeof(line) - 1);
	ckpt_cc_str_add(&s, a ? a : "");
	ckpt_cc_str_add(&s, b ? b : "");
	ckpt_cc_str_add(&s, c ? c : "");
	ckpt_cc_str_add(&s, d ? d : "");
	line[s.len++] = '\n';
	do {
		n = write(2, line, s.len);
	} while (n < 0 && errno == EINTR);
}

bool ckpt_cc_is_tcp_addr(const char *addr)
{
	return addr[0] != '/' && strchr(addr, ':') != NULL;
}

int ckpt_cc_check_private_dir(const char *path)
{
	struct stat st;
	char uid[24];
	struct ckpt_cc_str s;

	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		ckpt_cc_report("ckpt: refusing coordinator directory ", path,
			       ": not a directory", "");
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		ckpt_cc_str_init(&s, uid, sizeof(uid));
		ckpt_cc_str_add_u64(&s, st.st_uid);
		ckpt_cc_report("ckpt: refusing directory ", path,
			       ": owned by another user, uid ", uid);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		ckpt_cc_report("ckpt: refusing directory ", path,
			       ": writable by group or others",
			       " (chmod 0700 it)");
		return -EPERM;
	}
	return 0;
}

/* mkdir -p, each directory made owner-only (0700); path is changed while
 * this works and given back as it was. 0, or -errno (-ENOTDIR when path
 * is not a directory). */
int ckpt_cc_make_dirs(char *path)
{
	struct stat st;

	if (stat(path, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return mkdir(path, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

int ckpt_cc_make_private_dir(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return ckpt_cc_check_private_dir(path);
}

/* Drop the last component of out[0..*len) (never the leading '/'). */
static void drop_last_component(char *out, size_t *len)
{
	while (*len > 1 && out[*len - 1] != '/')
		(*len)--;
	if (*len > 1)
		(*len)--;
	out[*len] = '\0';
}

static int append_component(char *out, size_t *len, size_t cap,
			    const char *comp, size_t n)
{
	if (n == 0 || (n == 1 && comp[0] == '.'))
		return 0;
	if (n == 2 && comp[0] == '.' && comp[1] == '.') {
		drop_last_component(out, len);
		return 0;
	}
	if (*len + 1 + n >= cap)
		return -ENAMETOOLONG;
	if (*len > 1 || out[0] != '/')
		out[(*len)++] = '/';
	memcpy(out + *len, comp, n);
	*len += n;
	out[*len] = '\0';
	return 0;
}

static int append_path(char *out, size_t *len, size_t cap, const char *path)
{
	while (*path) {
		const char *slash = strchr(path, '/');
		size_t n = slash ? (size_t)(slash - path) : strlen(path);
		int r = append_component(out, len, cap, path, n);

		if (r < 0)
			return r;
		path += n;
		while (*path == '/')
			path++;
	}
	return 0;
}

int ckpt_cc_path_join(const char *dir, const char *rel, char *out,
		      size_t len)
{
	size_t pos = 1;
	int r;

	if (len < 2 || dir[0] != '/')
		return -EINVAL;
	out[0] = '/';
	out[1] = '\0';
	if (rel[0] != '/') {
		r = append_path(out, &pos, len, dir);
		if (r < 0)
			return r;
	}
	return append_path(out, &pos, len, rel);
}

/* "N", "NK", "NM", "NG" (powers of 1024) into bytes; -EINVAL otherwise. */
int ckpt_cc_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mult = 1;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s == 'K' || *s == 'k')
		mult = 1ULL << 10;
	else if (*s == 'M' || *s == 'm')
		mult = 1ULL << 20;
	else if (*s == 'G' || *s == 'g')
		mult = 1ULL << 30;
	if (mult != 1)
		s++;
	if (*s || v > UINT64_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

long ckpt_cc_progress_ms(const char *tool, long dflt)
{
	const char *s = getenv("CKPT_PROGRESS_MS");
	char *end;
	long ms;

	if (!s || !*s)
		return dflt;
	ms = strtol(s, &end, 10);
	if (*end || ms < 1 || ms > 60000) {
		fprintf(stderr, "%s: CKPT_PROGRESS_MS=%s is not a number of "
			"milliseconds from 1 to 60000; using %ld\n", tool, s,
			dflt);
		return dflt;
	}
	return ms;
}
