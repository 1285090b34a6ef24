/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * udp_backlog send MYIP PORT PEERIP N DELAY_MS
 * udp_backlog recv MYIP PORT PEERIP N DELAY_MS
 *
 * Datagrams queued between two hosts, for tests/test_udp_hosts.py: both
 * sockets are bound to MYIP:PORT and connected to PEERIP:PORT. The sender
 * sends "K" for K = 1..N, one every DELAY_MS; the receiver reads one every
 * 3 * DELAY_MS, so dozens wait in its queue at any moment, and answers
 * each with "ack K", which the sender reads as they come. Each side checks
 * every number is the one after the last and comes from its peer's
 * address as the program sees it (recvfrom as getpeername): a lost,
 * doubled or reordered datagram, or one from elsewhere, is a FAIL.
 * Nothing is ever sent again.
 * Start the receiver first (it says "ready"): a datagram sent to no socket
 * makes the sender's next call fail with ECONNREFUSED.
 * Output: "sent K" / "got K" per number, then "done send N" / "done recv N".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include "app_util.h"

#define P "udp_backlog"
#define TIMEOUT_MS 60000

static struct sockaddr_in peer;

static int open_socket(const char *me, const char *peer_ip, unsigned port)
{
	struct sockaddr_in own = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1;

	peer = own;
	if (inet_pton(AF_INET, me, &own.sin_addr) != 1 ||
	    inet_pton(AF_INET, peer_ip, &peer.sin_addr) != 1)
		die(P, "bad address %s or %s", me, peer_ip);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (void *)&own, sizeof(own)) < 0 ||
	    connect(fd, (void *)&peer, sizeof(peer)) < 0)
		die(P, "bind/connect %s:%u: %m", me, port);
	return fd;
}

/* The next datagram's number, checked to be `want` from the peer;
 * -1 when none is there within wait_ms. */
static long take(int fd, const char *word, long want, int wait_ms)
{
	char buf[64];
	struct sockaddr_in from;
	socklen_t len = sizeof(from);
	struct pollfd p = { fd, POLLIN, 0 };
	ssize_t n;
	long k;

	if (poll(&p, 1, wait_ms) <= 0)
		return -1;
	n = recvfrom(fd, buf, sizeof(buf) - 1, 0, (void *)&from, &len);
	if (n <= 0)
		die(P, "recvfrom: %m");
	buf[n] = 0;
	len = sizeof(peer);	/* after a swap the program sees the new one */
	if (getpeername(fd, (void *)&peer, &len) < 0)
		die(P, "getpeername: %m");
	if (from.sin_addr.s_addr != peer.sin_addr.s_addr ||
	    from.sin_port != peer.sin_port)
		die(P, "FAIL %s %s from %s:%u, not the peer", word, buf,
		    inet_ntoa(from.sin_addr), ntohs(from.sin_port));
	if ((*word && strncmp(buf, word, strlen(word))) ||
	    (k = strtol(buf + strlen(word), NULL, 10)) != want)
		die(P, "FAIL got '%s', want %s%ld", buf, word, want);
	return k;
}

static void sender(int fd, long n, unsigned delay)
{
	long acked = 0;

	for (long k = 1; k <= n; k++) {
		char buf[32];
		int len = snprintf(buf, sizeof(buf), "%ld", k);

		if (send(fd, buf, len, 0) != len)
			die(P, "send %ld: %m", k);
		say("sent %ld", k);
		sleep_ms(delay);
		while (take(fd, "ack ", acked + 1, 0) > 0)
			acked++;
	}
	while (acked < n) {
		if (take(fd, "ack ", acked + 1, TIMEOUT_MS) < 0)
			die(P, "FAIL no ack %ld within %d ms", acked + 1,
			    TIMEOUT_MS);
		acked++;
	}
	say("done send %ld", n);
}

static void receiver(int fd, long n, unsigned delay)
{
	say("ready");
	for (long k = 1; k <= n; k++) {
		char buf[32];
		int len;

		if (take(fd, "", k, TIMEOUT_MS) < 0)
			die(P, "FAIL no %ld within %d ms", k, TIMEOUT_MS);
		say("got %ld", k);
		len = snprintf(buf, sizeof(buf), "ack %ld", k);
		if (send(fd, buf, len, 0) != len)
			die(P, "send ack %ld: %m", k);
		sleep_ms(3 * delay);
	}
	say("done recv %ld", n);
}

int main(int argc, char **argv)
{
	int fd;
	long n;
	unsigned delay;

	if (argc != 7 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv")))
		die(P, "usage: %s send|recv MYIP PORT PEERIP N DELAY_MS",
		    argv[0]);
	fd = open_socket(argv[2], argv[4], parse_ulong(P, "PORT", argv[3], 1, 65535));
	n = parse_ulong(P, "N", argv[5], 1, 100000);
	delay = parse_ulong(P, "DELAY_MS", argv[6], 1, 10000);
	if (!strcmp(argv[1], "send"))
		sender(fd, n, delay);
	else
		receiver(fd, n, delay);
	return 0;
}
