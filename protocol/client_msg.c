// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Framing of coordinator messages: header + payload in one sendmsg() (no
 * Nagle/delayed-ACK stall between the two), bounded receives. On an
 * authenticated (TCP) connection each message also carries its MAC
 * trailer, sealed here and checked here (client_auth.c holds the keys).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ckpt/coord_client.h"
#include "auth.h"
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
	struct ckpt_auth_session *session = ckpt_cc_session_of(fd);
	uint8_t mac[CKPT_AUTH_MAC_LEN];
	struct iovec iov[3] = {
		{ .iov_base = &hdr, .iov_len = sizeof(hdr) },
		{ .iov_base = (void *)payload, .iov_len = len },
		{ .iov_base = mac, .iov_len = session ? sizeof(mac) : 0 },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };
	int64_t deadline = ckpt_cc_deadline(CKPT_CC_SEND_TIMEOUT_MS);

	if (len > CKPT_MSG_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (len && !payload)
		return -EINVAL;
	if (session)
		ckpt_auth_seal(session, &hdr, payload, mac);
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
 * step; on an authenticated connection it still goes through the MAC
 * (mac: NULL otherwise). */
static int discard(int fd, uint32_t len, struct ckpt_hmac *mac,
		   int64_t *deadline, bool *started)
{
	char sink[1024];

	while (len) {
		uint32_t n = len < sizeof(sink) ? len : sizeof(sink);
		int r = recv_exact(fd, sink, n, deadline, started);

		if (r < 0)
			return r;
		if (mac)
			ckpt_hmac_update(mac, sink, n);
		len -= n;
	}
	return 0;
}

/* A Unix peer of protocol version 1 (a process restarted from an older
 * image) frames its messages the same way; TCP needs version 2. */
static bool version_ok(const struct ckpt_msg_header *hdr,
		       const struct ckpt_auth_session *session)
{
	return hdr->version == CKPT_PROTOCOL_VERSION ||
	       (!session && hdr->version == CKPT_PROTOCOL_VERSION_UNIX_OLD);
}

/* The MAC trailer of an authenticated connection: a message that does
 * not carry the right one was forged, altered, replayed or reordered, and
 * the connection is not to be trusted any more (-EBADMSG). */
static int check_trailer(int fd, struct ckpt_hmac *mac, int64_t *deadline,
			 bool *started)
{
	uint8_t got[CKPT_AUTH_MAC_LEN], want[CKPT_AUTH_MAC_LEN];
	int r;

	r = recv_exact(fd, got, sizeof(got), deadline, started);
	if (r < 0)
		return r;
	ckpt_hmac_final(mac, want);
	if (ckpt_mac_equal(got, want, sizeof(want)))
		return 0;
	ckpt_cc_report("ckpt: a message with a wrong MAC on an authenticated "
		       "coordinator connection (altered or injected on the "
		       "way)", "; closing it", "", "");
	return -EBADMSG;
}

/* Payload (all of it, or discarded when larger than cap) and trailer. */
static int recv_body(int fd, const struct ckpt_msg_header *hdr,
		     void *payload, uint32_t cap, int64_t *deadline,
		     bool *started)
{
	struct ckpt_auth_session *session = ckpt_cc_session_of(fd);
	struct ckpt_hmac mac;
	int r;

	if (session)
		ckpt_auth_open_begin(session, hdr, &mac);
	if (hdr->len > cap) {
		r = discard(fd, hdr->len, session ? &mac : NULL, deadline,
			    started);
	} else {
		r = recv_exact(fd, payload, hdr->len, deadline, started);
		if (r == 0 && session)
			ckpt_hmac_update(&mac, payload, hdr->len);
	}
	if (r == 0 && session)
		r = check_trailer(fd, &mac, deadline, started);
	if (r == 0 && hdr->len > cap)
		r = -EMSGSIZE;
	return r;
}

int ckpt_msg_recv(int fd, void *payload, uint32_t cap, uint32_t *len,
		  int timeout_ms)
{
	struct ckpt_auth_session *session = ckpt_cc_session_of(fd);
	struct ckpt_msg_header hdr;
	int64_t deadline = ckpt_cc_deadline(timeout_ms);
	bool started = false;
	int r;

	r = recv_exact(fd, &hdr, sizeof(hdr), &deadline, &started);
	if (r < 0)
		return r;
	if (hdr.magic != CKPT_MSG_MAGIC || !version_ok(&hdr, session) ||
	    hdr.type == 0 || hdr.len > CKPT_MSG_MAX_PAYLOAD)
		return -EPROTO;
	r = recv_body(fd, &hdr, payload, cap, &deadline, &started);
	if (r < 0)
		return r;
	if (len)
		*len = hdr.len;
	return hdr.type;
}
