// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Framing of coordinator messages: header + payload in one sendmsg() (no
 * Nagle/delayed-ACK stall between the two), bounded receives.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ckpt/coord_client.h"
#include "client_internal.h"

static void advance_iov(struct msghdr *mh, size_t n)
{
	while (n && mh->msg_iovlen) {
		struct iovec *iov = mh->msg_iov;

		if (n < iov->iov_len) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= n;
			return;
		}
		n -= iov->iov_len;
		mh->msg_iov++;
		mh->msg_iovlen--;
	}
	/* skip empty trailing vectors */
	while (mh->msg_iovlen && mh->msg_iov->iov_len == 0) {
		mh->msg_iov++;
		mh->msg_iovlen--;
	}
}

int ckpt_msg_send(int fd, uint16_t type, const void *payload, uint32_t len)
{
	struct ckpt_msg_header hdr = {
		.magic = CKPT_MSG_MAGIC,
		.version = CKPT_PROTOCOL_VERSION,
		.type = type,
		.len = len,
	};
	struct iovec iov[2] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	int64_t deadline = ckpt_cc_deadline(CKPT_CC_SEND_TIMEOUT_MS);

	if (len > CKPT_MSG_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (len && !payload)
		return -EINVAL;
	while (mh.msg_iovlen) {
		/* MSG_DONTWAIT: a peer that stops reading must not block us
		 * forever, even on a blocking socket. */
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		int r;

		if (n >= 0) {
			advance_iov(&mh, (size_t)n);
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		r = ckpt_cc_wait_fd(fd, POLLOUT, deadline);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Read exactly len bytes. Until the first byte of a message arrives the
 * caller's deadline applies (-ETIMEDOUT, connection still usable); after
 * that the rest must follow within CKPT_CC_MSG_REST_TIMEOUT_MS, else the
 * stream is out of step and we say -EPROTO.
 */
static int recv_exact(int fd, void *buf, size_t len, int64_t *deadline,
		      bool *started)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, (char *)buf + got, len - got,
				 MSG_DONTWAIT);
		int r;

		if (n > 0) {
			got += (size_t)n;
			if (!*started) {
				*started = true;
				*deadline = ckpt_cc_deadline(
					CKPT_CC_MSG_REST_TIMEOUT_MS);
			}
			continue;
		}
		if (n == 0)
			return *started ? -EPROTO : -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		r = ckpt_cc_wait_fd(fd, POLLIN, *deadline);
		if (r == -ETIMEDOUT && *started)
			return -EPROTO;
		if (r < 0)
			return r;
	}
	return 0;
}

/* Throw away a payload too large for the caller, so the stream stays in
 * step. */
static int discard(int fd, uint32_t len, int64_t *deadline, bool *started)
{
	char sink[1024];

	while (len) {
		uint32_t n = len < sizeof(sink) ? len : sizeof(sink);
		int r = recv_exact(fd, sink, n, deadline, started);

		if (r < 0)
			return r;
		len -= n;
	}
	return 0;
}

int ckpt_msg_recv(int fd, void *payload, uint32_t cap, uint32_t *len,
		  int timeout_ms)
{
	struct ckpt_msg_header hdr;
	int64_t deadline = ckpt_cc_deadline(timeout_ms);
	bool started = false;
	int r;

	r = recv_exact(fd, &hdr, sizeof(hdr), &deadline, &started);
	if (r < 0)
		return r;
	if (hdr.magic != CKPT_MSG_MAGIC ||
	    hdr.version != CKPT_PROTOCOL_VERSION || hdr.type == 0 ||
	    hdr.len > CKPT_MSG_MAX_PAYLOAD)
		return -EPROTO;
	if (hdr.len > cap) {
		r = discard(fd, hdr.len, &deadline, &started);
		return r < 0 ? r : -EMSGSIZE;
	}
	r = recv_exact(fd, payload, hdr.len, &deadline, &started);
	if (r < 0)
		return r;
	if (len)
		*len = hdr.len;
	return hdr.type;
}
