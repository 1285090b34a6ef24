// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Coordinator connections: non-blocking sockets with an input buffer
 * (messages are parsed only once complete, so a slow peer never stalls the
 * loop) and an output queue (sends never block; a queued message is
 * written with one send() together with whatever else is queued).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coordinator.h"

static void buf_reserve(struct buf *b, size_t extra)
{
	size_t want = b->len + extra + 1;
	char *p;

	if (want <= b->cap)
		return;
	if (want < 256)
		want = 256;
	if (want < b->cap * 2)
		want = b->cap * 2;
	p = realloc(b->data, want);
	if (!p) {
		coord_log("out of memory growing a buffer to %zu bytes", want);
		exit(1);
	}
	b->data = p;
	b->cap = want;
}

void buf_append(struct buf *b, const void *data, size_t len)
{
	buf_reserve(b, len);
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void buf_consume(struct buf *b, size_t len)
{
	if (len >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + len, b->len - len);
	b->len -= len;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

const char *buf_str(struct buf *b)
{
	if (!b->data)
		return "";
	b->data[b->len] = '\0';
	return b->data;
}

static void conns_reserve(struct coordinator *co)
{
	size_t cap = co->conns_cap * 2 + 8;
	struct conn **p;

	if (co->nconns < co->conns_cap)
		return;
	p = realloc(co->conns, cap * sizeof(*p));
	if (!p) {
		coord_log("out of memory accepting connection %zu", cap);
		exit(1);
	}
	co->conns = p;
	co->conns_cap = cap;
}

struct conn *conn_add(struct coordinator *co, int fd, const char *peer)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c) {
		coord_log("out of memory accepting a connection from %s", peer);
		exit(1);
	}
	conns_reserve(co);
	c->fd = fd;
	c->kind = CONN_NEW;
	c->serial = ++co->next_serial;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->first_msg_deadline = now_ms() + COORD_HELLO_TIMEOUT_MS;
	proc_files_init(c);
	co->conns[co->nconns++] = c;
	conn_events_add(c);
	return c;
}

static int send_queued(struct conn *c)
{
	while (c->out.len && !c->eof) {
		ssize_t n = send(c->fd, c->out.data, c->out.len,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			buf_consume(&c->out, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		c->eof = true;
		return n < 0 ? -errno : -EPIPE;
	}
	return 0;
}

int conn_flush(struct conn *c)
{
	int r = send_queued(c);

	conn_events_update(c);
	return r;
}

void conn_send(struct conn *c, uint16_t type, const void *payload,
	       uint32_t len)
{
	struct ckpt_msg_header hdr = {
		.magic = CKPT_MSG_MAGIC,
		/* a Unix peer of version 1 gets its own version back */
		.version = c->peer_version ? c->peer_version
					   : CKPT_PROTOCOL_VERSION,
		.type = type,
		.len = len,
	};

	if (c->eof)
		return;
	if (c->out.len + sizeof(hdr) + len + auth_trailer_len(c) >
	    COORD_MAX_OUT_BYTES) {
		coord_log("%s: dropping connection: it does not read its "
			  "messages (%zu bytes queued)", c->peer, c->out.len);
		c->eof = true;
		return;
	}
	buf_append(&c->out, &hdr, sizeof(hdr));
	if (len)
		buf_append(&c->out, payload, len);
	auth_append_trailer(c, &hdr, payload);
	conn_flush(c);
}

void conn_reply_warnings(struct conn *c, int status, const char *text,
			 const char *warnings)
{
	size_t tlen = strlen(text) + 1, wlen = strlen(warnings) + 1;
	size_t max = CKPT_MSG_MAX_PAYLOAD - sizeof(struct ckpt_msg_cmd_reply);
	struct ckpt_msg_cmd_reply rep = { .status = status };
	struct buf msg = { 0 };

	if (tlen > max)
		tlen = max;
	if (wlen > max - tlen)
		wlen = max - tlen;
	rep.text_len = (uint32_t)tlen;
	buf_append(&msg, &rep, sizeof(rep));
	buf_append(&msg, text, tlen - 1);
	buf_append(&msg, "", 1);
	/* older commands read text_len bytes and stop there */
	if (wlen > 1) {
		buf_append(&msg, warnings, wlen - 1);
		buf_append(&msg, "", 1);
	}
	conn_send(c, CKPT_MSG_CMD_REPLY, msg.data, (uint32_t)msg.len);
	buf_free(&msg);
}

void conn_reply(struct conn *c, int status, const char *text)
{
	conn_reply_warnings(c, status, text, "");
}

int conn_fill(struct conn *c)
{
	for (;;) {
		ssize_t n;

		if (c->in.len > sizeof(struct ckpt_msg_header) +
				COORD_MAX_IN_PAYLOAD + CKPT_AUTH_MAC_LEN)
			return 0;	/* conn_next_msg() will complain */
		size_t room;

		buf_reserve(&c->in, 16384);
		room = c->in.cap - c->in.len - 1;
		n = recv(c->fd, c->in.data + c->in.len, room, MSG_DONTWAIT);
		/* a short read took all there was: the main loop's epoll
		 * (level-triggered) reports what comes next, so no recv
		 * that fails with EAGAIN after each message */
		if (n > 0) {
			c->in.len += (size_t)n;
			if ((size_t)n < room)
				return 0;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		c->eof = true;
		return n < 0 ? -errno : -ECONNRESET;
	}
}

/* Version 1 frames messages as 2 does on a Unix socket (a process
 * restarted from an older image); on TCP it would send the secret. A
 * connection keeps the version of its first message. */
static bool version_ok(const struct conn *c, uint16_t version)
{
	if (c->peer_version)
		return version == c->peer_version;
	return version == CKPT_PROTOCOL_VERSION ||
	       (c->local_peer && version == CKPT_PROTOCOL_VERSION_UNIX_OLD);
}

int conn_next_msg(struct conn *c, struct ckpt_msg_header *hdr,
		  const char **payload)
{
	if (c->in.len < sizeof(*hdr))
		return 0;
	memcpy(hdr, c->in.data, sizeof(*hdr));
	if (hdr->magic != CKPT_MSG_MAGIC || !version_ok(c, hdr->version) ||
	    hdr->len > COORD_MAX_IN_PAYLOAD)
		return -EPROTO;
	c->in_msg_bytes = sizeof(*hdr) + hdr->len + auth_trailer_len(c);
	if (c->in.len < c->in_msg_bytes)
		return 0;
	*payload = c->in.data + sizeof(*hdr);
	if (!c->peer_version)
		c->peer_version = hdr->version;
	return auth_check_trailer(c, hdr, *payload) < 0 ? -EBADMSG : 1;
}

void conn_drop_msg(struct conn *c, const struct ckpt_msg_header *hdr)
{
	(void)hdr;
	buf_consume(&c->in, c->in_msg_bytes);
}

void conn_free(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	proc_files_close(c);
	buf_free(&c->in);
	buf_free(&c->out);
	buf_free(&c->proc.unrestored);
	members_forget_children(c);
	free(c);
}
