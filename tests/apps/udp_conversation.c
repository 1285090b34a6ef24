/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * udp_conversation serve IP PORT N DELAY_MS
 * udp_conversation call IP PORT N DELAY_MS
 *
 * A UDP ping-pong between two programs, for the multi-host tests: the
 * server's socket is bound to IP:PORT and answers each datagram to its
 * source (recvfrom/sendto); the caller's socket is connected to IP:PORT
 * and sends "K" (one every DELAY_MS), the server answers "K SUM" with a
 * running hash of the numbers, the caller checks it against its own.
 * As UDP programs do, the caller sends K again after RESEND_MS without
 * its answer (a datagram lost on the wire), and the server answers a
 * repeated K with the same answer without counting it twice: the
 * numbers and hashes are those of an uninterrupted run however many
 * datagrams were lost. A number out of order or a wrong hash is a FAIL.
 * "callto" instead of "call": the caller's socket is not connected, each
 * number goes by sendto to IP:PORT as given at the start (an address the
 * program keeps), answers are taken with recvfrom, and one whose source
 * is not that address is a FAIL (after a restart that moved the server's
 * host, the program still sees the address it knew).
 * Output:
 *   server: "served K" per number, then "done serve N SUM"
 *   caller: "reply K SUM" per answer, then "done call N SUM"
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include "conversation.h"

#define PROG "udp_conversation"
#define RESEND_MS 300
#define MAX_RESENDS 100		/* 30 s without an answer */

static struct sockaddr_in server;	/* callto: where each number goes */
static int unconnected;

static int udp_socket(const struct conversation *c)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	server.sin_family = AF_INET;
	server.sin_port = htons(c->port);
	if (inet_pton(AF_INET, c->ip, &server.sin_addr) != 1)
		die(PROG, "%s: not an IPv4 address", c->ip);
	if (fd < 0)
		die(PROG, "socket: %s", strerror(errno));
	unconnected = c->unconnected;
	if (c->serve ? bind(fd, (void *)&server, sizeof(server)) :
	    !unconnected && connect(fd, (void *)&server, sizeof(server)))
		die(PROG, "%s %s:%lu: %s", c->serve ? "bind" : "connect", c->ip,
		    c->port, strerror(errno));
	return fd;
}

static void serve(int fd, unsigned long n, unsigned long delay)
{
	unsigned long want = 1, k;
	struct sockaddr_in from;
	socklen_t len;
	uint64_t sum = 0;
	char buf[64], answer[64] = "";
	ssize_t got;

	while (want <= n) {
		if (poll(&(struct pollfd){ fd, POLLIN, 0 }, 1,
			 MAX_RESENDS * RESEND_MS) == 0)
			die(PROG, "FAIL serve: no number %lu for %d s", want,
			    MAX_RESENDS * RESEND_MS / 1000);
		len = sizeof(from);
		got = recvfrom(fd, buf, sizeof(buf) - 1, 0, (void *)&from, &len);
		if (got < 0)
			die(PROG, "FAIL serve: recvfrom: %s", strerror(errno));
		buf[got] = 0;
		k = strtoul(buf, NULL, 10);
		if (k > want || k + 1 < want)
			die(PROG, "FAIL serve: number %lu, expected %lu", k,
			    want);
		if (k == want) {
			sum = mix64(sum + k);
			snprintf(answer, sizeof(answer), "%lu %016" PRIx64, k,
				 sum);
			say("served %lu", k);
			want++;
		}
		sendto(fd, answer, strlen(answer), 0, (void *)&from, len);
		sleep_ms(delay / 2);
	}
	/* the last answer may be lost: answer its repeats for a while */
	while (poll(&(struct pollfd){ fd, POLLIN, 0 }, 1, 2 * RESEND_MS) > 0) {
		len = sizeof(from);
		if (recvfrom(fd, buf, sizeof(buf), 0, (void *)&from, &len) >= 0)
			sendto(fd, answer, strlen(answer), 0, (void *)&from,
			       len);
	}
	say("done serve %lu %016" PRIx64, n, sum);
}

/* callto: an answer comes from the address the numbers go to. */
static void check_source(const struct sockaddr_in *from, socklen_t len)
{
	char got[INET_ADDRSTRLEN] = "?", want[INET_ADDRSTRLEN] = "?";

	if (!unconnected ||
	    (len == sizeof(*from) && from->sin_family == AF_INET &&
	     from->sin_addr.s_addr == server.sin_addr.s_addr &&
	     from->sin_port == server.sin_port))
		return;
	inet_ntop(AF_INET, &from->sin_addr, got, sizeof(got));
	inet_ntop(AF_INET, &server.sin_addr, want, sizeof(want));
	die(PROG, "FAIL call: answer from %s:%u, the numbers go to %s:%u",
	    got, ntohs(from->sin_port), want, ntohs(server.sin_port));
}

/* The answer to number want, sending it again every RESEND_MS. */
static void ask(int fd, unsigned long want, uint64_t sum)
{
	unsigned long k;
	uint64_t got;
	char buf[64];
	ssize_t n;

	for (int tries = 0; tries < MAX_RESENDS; tries++) {
		struct pollfd p = { fd, POLLIN, 0 };

		n = snprintf(buf, sizeof(buf), "%lu", want);
		sendto(fd, buf, n, 0, unconnected ? (void *)&server : NULL,
		       unconnected ? sizeof(server) : 0);
		while (poll(&p, 1, RESEND_MS) > 0) {
			struct sockaddr_in from;
			socklen_t len = sizeof(from);

			n = recvfrom(fd, buf, sizeof(buf) - 1, 0,
				     (void *)&from, &len);
			if (n < 0 && errno != ECONNREFUSED)
				die(PROG, "FAIL call: recv: %s",
				    strerror(errno));
			if (n <= 0)
				continue;	/* no server yet */
			check_source(&from, len);
			buf[n] = 0;
			if (sscanf(buf, "%lu %" SCNx64, &k, &got) != 2)
				die(PROG, "FAIL call: answer '%s'", buf);
			if (k < want)
				continue;	/* an earlier one's repeat */
			if (k != want || got != sum)
				die(PROG, "FAIL call: answer %lu %016" PRIx64
				    ", expected %lu %016" PRIx64, k, got,
				    want, sum);
			return;
		}
	}
	die(PROG, "FAIL call: no answer to %lu", want);
}

static void call(int fd, unsigned long n, unsigned long delay)
{
	uint64_t sum = 0;

	for (unsigned long want = 1; want <= n; want++) {
		sum = mix64(sum + want);
		ask(fd, want, sum);
		say("reply %lu %016" PRIx64, want, sum);
		sleep_ms(delay);
	}
	say("done call %lu %016" PRIx64, n, sum);
}

int main(int argc, char **argv)
{
	struct conversation c = conversation_args(PROG, argc, argv, 1);
	int fd = udp_socket(&c);

	if (c.serve)
		serve(fd, c.n, c.delay);
	else
		call(fd, c.n, c.delay);
	return 0;
}
