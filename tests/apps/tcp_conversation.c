/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tcp_conversation serve IP PORT N DELAY_MS
 * tcp_conversation call IP PORT N DELAY_MS
 *
 * Two programs talking over one TCP connection, for the multi-host tests:
 * the caller keeps 4 numbered requests in flight ("K\n", one every
 * DELAY_MS); the server checks each is the previous one plus 1 and answers
 * "K SUM\n" with a running hash of the numbers; the caller checks each
 * answer against its own hash. A byte lost, doubled or reordered across a
 * restart ends either side with FAIL. Output:
 *   server: "served K" per request, then "done serve N SUM"
 *   caller: "reply K SUM" per answer, then "done call N SUM"
 * With TCP_CONVERSATION_CHECK_NAMES=1 in the environment, each side
 * checks at every step that getsockname and getpeername give the IP
 * addresses they gave at the start (a restart that moved a host
 * translates them back), else FAIL.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "conversation.h"

#define PROG "tcp_conversation"
#define IN_FLIGHT 4

static int connected(const char *mode, const char *ip, unsigned long port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	int one = 1, l, fd = -1;

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		die(PROG, "%s: not an IPv4 address", ip);
	if (!strcmp(mode, "call")) {
		for (int i = 0; i < 500; i++) {	/* the server may be late */
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(fd, (void *)&a, sizeof(a)) == 0)
				return fd;
			close(fd);
			sleep_ms(20);
		}
		die(PROG, "connect %s:%lu: %s", ip, port, strerror(errno));
	}
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (void *)&a, sizeof(a)) < 0 || listen(l, 1) < 0)
		die(PROG, "listen on %s:%lu: %s", ip, port, strerror(errno));
	fd = accept(l, NULL, NULL);
	if (fd < 0)
		die(PROG, "accept: %s", strerror(errno));
	close(l);
	return fd;
}

static struct in_addr own_ip, peer_ip;
static int check_names;

static void name_ips(int fd, struct in_addr *own, struct in_addr *peer)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	if (getsockname(fd, (void *)&a, &len) < 0)
		die(PROG, "getsockname: %s", strerror(errno));
	*own = a.sin_addr;
	len = sizeof(a);
	if (getpeername(fd, (void *)&a, &len) < 0)
		die(PROG, "getpeername: %s", strerror(errno));
	*peer = a.sin_addr;
}

/* TCP_CONVERSATION_CHECK_NAMES: the addresses are those of the start. */
static void check_name_ips(int fd)
{
	struct in_addr own, peer;
	char was[2][INET_ADDRSTRLEN], now[2][INET_ADDRSTRLEN];

	if (!check_names)
		return;
	name_ips(fd, &own, &peer);
	if (own.s_addr == own_ip.s_addr && peer.s_addr == peer_ip.s_addr)
		return;
	inet_ntop(AF_INET, &own_ip, was[0], sizeof(was[0]));
	inet_ntop(AF_INET, &peer_ip, was[1], sizeof(was[1]));
	inet_ntop(AF_INET, &own, now[0], sizeof(now[0]));
	inet_ntop(AF_INET, &peer, now[1], sizeof(now[1]));
	die(PROG, "FAIL: getsockname/getpeername give %s/%s, at the start "
	    "%s/%s", now[0], now[1], was[0], was[1]);
}

static void serve(FILE *in, int fd, unsigned long n, unsigned long delay)
{
	uint64_t sum = 0;
	unsigned long k;
	char line[64];

	for (unsigned long want = 1; want <= n; want++) {
		if (!fgets(line, sizeof(line), in))
			die(PROG, "FAIL serve: EOF before request %lu", want);
		k = strtoul(line, NULL, 10);
		if (k != want)
			die(PROG, "FAIL serve: request %lu, expected %lu", k,
			    want);
		sum = mix64(sum + k);
		check_name_ips(fd);
		dprintf(fd, "%lu %016" PRIx64 "\n", k, sum);
		say("served %lu", k);
		sleep_ms(delay / 2);
	}
	say("done serve %lu %016" PRIx64, n, sum);
}

static void call(FILE *in, int fd, unsigned long n, unsigned long delay)
{
	unsigned long sent = 0, k;
	uint64_t sum = 0, got;
	char line[64];

	for (unsigned long want = 1; want <= n; want++) {
		while (sent < n && sent < want + IN_FLIGHT - 1)
			dprintf(fd, "%lu\n", ++sent);
		if (!fgets(line, sizeof(line), in) ||
		    sscanf(line, "%lu %" SCNx64, &k, &got) != 2)
			die(PROG, "FAIL call: no answer %lu", want);
		sum = mix64(sum + want);
		if (k != want || got != sum)
			die(PROG, "FAIL call: answer %lu %016" PRIx64 ", expected "
			    "%lu %016" PRIx64, k, got, want, sum);
		check_name_ips(fd);
		say("reply %lu %016" PRIx64, k, sum);
		sleep_ms(delay);
	}
	say("done call %lu %016" PRIx64, n, sum);
}

int main(int argc, char **argv)
{
	struct conversation c = conversation_args(PROG, argc, argv, 0);
	int fd = connected(argv[1], c.ip, c.port);
	FILE *in = fdopen(dup(fd), "r");

	if (!in)
		die(PROG, "fdopen: %s", strerror(errno));
	check_names = getenv("TCP_CONVERSATION_CHECK_NAMES") != NULL;
	if (check_names)
		name_ips(fd, &own_ip, &peer_ip);
	if (c.serve)
		serve(in, fd, c.n, c.delay);
	else
		call(in, fd, c.n, c.delay);
	return 0;
}
