/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helpers shared by protocol/client*.c. They run inside libckpt while
 * the application's threads are suspended, so: no malloc, no stdio, no
 * locks; only stack buffers and plain system calls.
 */
#ifndef CKPT_COORD_CLIENT_INTERNAL_H
#define CKPT_COORD_CLIENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A message, once its first byte arrived, must be complete this soon:
 * senders write each message with one sendmsg(). */
#define CKPT_CC_MSG_REST_TIMEOUT_MS	10000
/* A peer that does not drain its socket for this long is broken. */
#define CKPT_CC_SEND_TIMEOUT_MS		30000

/* A bounded string builder over a caller's buffer; never overflows, always
 * NUL-terminates, remembers truncation. */
struct ckpt_cc_str {
	char *buf;
	size_t cap;
	size_t len;
	bool truncated;
};

void ckpt_cc_str_init(struct ckpt_cc_str *s, char *buf, size_t cap);
void ckpt_cc_str_add(struct ckpt_cc_str *s, const char *text);
void ckpt_cc_str_add_u64(struct ckpt_cc_str *s, uint64_t v);
void ckpt_cc_str_add_i64(struct ckpt_cc_str *s, int64_t v);

size_t ckpt_cc_strlcpy(char *dst, const char *src, size_t cap);
/* A size "N", "NK", "NM" or "NG" (1024-based) in bytes: 0 or -EINVAL. */
int ckpt_cc_parse_size(const char *s, uint64_t *out);
/* CKPT_PROGRESS_MS (1-60000): how often a progress line is redrawn;
 * dflt when unset, and when invalid after `tool` says so on stderr. */
long ckpt_cc_progress_ms(const char *tool, long dflt);

/* A connection's descriptor, just made: inside libckpt it moves up
 * where libckpt's own live, marked as libckpt's at once, so a program
 * closing every descriptor it did not open (daemons at their start) does
 * not close it in the middle of the handshake (wrappers/close.c); the
 * tools and the coordinator leave it where it is. ckpt_cc_close_fd
 * closes one (and forgets it as libckpt's). */
int ckpt_cc_keep_fd(int fd);
void ckpt_cc_close_fd(int fd);

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t ckpt_cc_now_ms(void);
/* Deadline for a timeout in ms (< 0: none, returned as -1). */
int64_t ckpt_cc_deadline(int timeout_ms);
/* poll() one fd for events until deadline_ms (-1: forever); 0 when ready,
 * -ETIMEDOUT, or -errno. Retries EINTR. */
int ckpt_cc_wait_fd(int fd, short events, int64_t deadline_ms);

/* Write a one-line message to stderr (fd 2) with write(2). Used only for
 * refusals the caller cannot explain from an errno alone. */
void ckpt_cc_report(const char *a, const char *b, const char *c,
		    const char *d);

/* "HOST:PORT" (contains ':' and does not start with '/') vs a Unix path. */
bool ckpt_cc_is_tcp_addr(const char *addr);

/* Check that an existing directory belongs to us and is not writable by
 * group or others; -EPERM (after a one-line report) otherwise. */
int ckpt_cc_check_private_dir(const char *path);
/* mkdir -m 0700 if missing, then ckpt_cc_check_private_dir(). */
int ckpt_cc_make_private_dir(const char *path);
/* mkdir -p, 0700 for each directory made; 0 or -errno */
int ckpt_cc_make_dirs(char *path);

/* out = dir + "/" + rel with "." and ".." removed lexically (dir must be
 * absolute and free of symlink tricks, e.g. from /proc/self/exe). */
int ckpt_cc_path_join(const char *dir, const char *rel, char *out,
		      size_t len);

/* TCP: the handshake of docs/protocol.md, "Authentication", on a fresh
 * connection to addr (until deadline_ms, -1: none; at most 10 s). 0, or
 * -EKEYREJECTED when the peer cannot prove it knows the secret, -EPROTO
 * when it does not speak the handshake, -errno. */
int ckpt_cc_authenticate(int fd, const char *addr, int64_t deadline_ms);
/* The keys of an authenticated connection; NULL for a Unix socket. */
struct ckpt_auth_session *ckpt_cc_session_of(int fd);
/* A new connection on a socket that may reuse a closed one's inode. */
void ckpt_cc_session_forget(int fd);

#endif /* CKPT_COORD_CLIENT_INTERNAL_H */
