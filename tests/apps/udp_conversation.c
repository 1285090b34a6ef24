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
#define MAX_RESENDS 400		/* 2 minutes without an answer */

static int udp_socket(int serve, const char *ip, unsigned long port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		die(PROG, "%s: not an IPv4 address", ip);
	if (fd < 0)
		die(PROG, "socket: %s", strerror(errno));
	if (serve ? bind(fd, (void *)&a, sizeof(a)) :
		    connect(fd, (void *)&a, sizeof(a)))
		die(PROG, "%s %s:%lu: %s", serve ? "bind" : "connect", ip, port,
		    strerror(errno));
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

/* The answer to number want, sending it again every RESEND_MS. */
static void ask(int fd, unsigned long want, uint64_t sum)
{
	unsigned long k;
	uint64_t got;
	char buf[64];
	ssize_t n;

	for (int tries = 0; tries < MAX_RESENDS; tries++) {
		struct pollfd p = { fd, POLLIN, 0 };

		dprintf(fd, "%lu", want);
		while (poll(&p, 1, RESEND_MS) > 0) {
			n = recv(fd, buf, sizeof(buf) - 1, 0);
			if (n < 0 && errno != ECONNREFUSED)
				die(PROG, "FAIL call: recv: %s",
				    strerror(errno));
			if (n <= 0)
				continue;	/* no server yet */
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
	struct conversation c = conversation_args(PROG, argc, argv);
	int fd = udp_socket(c.serve, c.ip, c.port);

	if (c.serve)
		serve(fd, c.n, c.delay);
	else
		call(fd, c.n, c.delay);
	return 0;
}
