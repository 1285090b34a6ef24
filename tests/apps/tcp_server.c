/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small line server: listens on 127.0.0.1:PORT (0: any port), on
 * [::1] (any port; IPV6_V6ONLY set), on a Unix path and on the abstract
 * name "@PATH", with SO_REUSEADDR and O_NONBLOCK listeners (the IPv4 one
 * also at fd 20, as after dup), poll() for events. Each line a client
 * sends is answered with a running counter shared by all clients ("N\n"),
 * so a restart must continue it exactly; "quit" ends the server.
 * A client whose read returns 0 (or fails) is closed and the server goes
 * on serving. A UDP socket bound to 127.0.0.1 (any port) answers each
 * datagram with the counter too.
 *
 * With CLIENT_REQUESTS, a forked child is a client inside the computation:
 * it connects to 127.0.0.1:PORT, keeps 4 requests in flight (one every
 * DELAY_MS), checks each reply is the previous one plus 1, and sends
 * "quit" after the last one.
 *
 *   tcp_server PORT UNIX_PATH [CLIENT_REQUESTS DELAY_MS]
 *   -> listening tcp PORT tcp6 PORT6 unix PATH udp UPORT
 *   -> accepted fd N / served N / closed fd N write ok|why /
 *      error fd N: why
 *   -> OK tcp_server N
 *   client: -> reply N ... / OK client N / FAIL ...
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "app_util.h"

#define MAX_FDS 64

static struct pollfd pfd[MAX_FDS];
static char inbuf[MAX_FDS][256];
static size_t inlen[MAX_FDS];
static int nfds, nlisteners, udp;
static long counter;

static void add(int fd)
{
	if (nfds == MAX_FDS)
		die("tcp_server", "too many fds");
	pfd[nfds].fd = fd;
	pfd[nfds].events = POLLIN;
	pfd[nfds].revents = 0;
	inlen[nfds] = 0;
	nfds++;
}

static int listen_on(const struct sockaddr *sa, socklen_t len, int v6only)
{
	int s = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK, 0), on = 1;

	if (s < 0)
		die("tcp_server", "socket: %s", strerror(errno));
	if (sa->sa_family != AF_UNIX &&
	    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0)
		die("tcp_server", "SO_REUSEADDR: %s", strerror(errno));
	if (sa->sa_family == AF_INET6 &&
	    setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v6only,
		       sizeof(v6only)) < 0)
		die("tcp_server", "IPV6_V6ONLY: %s", strerror(errno));
	if (bind(s, sa, len) < 0 || listen(s, 16) < 0)
		die("tcp_server", "bind/listen: %s", strerror(errno));
	add(s);
	nlisteners++;
	return s;
}

static int port_of(int s)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(s, (struct sockaddr *)&ss, &len) < 0)
		die("tcp_server", "getsockname: %s", strerror(errno));
	return ss.ss_family == AF_INET6 ?
	       ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) :
	       ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void drop(int i)
{
	close(pfd[i].fd);
	pfd[i] = pfd[nfds - 1];
	memcpy(inbuf[i], inbuf[nfds - 1], inlen[nfds - 1]);
	inlen[i] = inlen[nfds - 1];
	nfds--;
}

static void answer_datagram(void)
{
	struct sockaddr_storage from;
	socklen_t len = sizeof(from);
	char buf[256], reply[32];

	if (recvfrom(udp, buf, sizeof(buf), 0, (struct sockaddr *)&from,
		     &len) < 0) {
		say("error fd %d: recvfrom: %s", udp, strerror(errno));
		return;
	}
	counter++;
	snprintf(reply, sizeof(reply), "%ld\n", counter);
	if (sendto(udp, reply, strlen(reply), 0, (struct sockaddr *)&from,
		   len) < 0)
		say("error fd %d: sendto: %s", udp, strerror(errno));
	say("served %ld", counter);
}

/* 1: quit asked */
static int serve(int i)
{
	char buf[256], reply[32];
	ssize_t n = read(pfd[i].fd, buf, sizeof(buf));

	if (n <= 0) {
		if (n < 0)
			say("error fd %d: %s", pfd[i].fd, strerror(errno));
		else	/* a peer that is gone: EPIPE at once after a restart */
			say("closed fd %d write %s", pfd[i].fd,
			    write(pfd[i].fd, "bye\n", 4) < 0 ? strerror(errno)
							       : "ok");
		drop(i);
		return 0;
	}
	for (ssize_t k = 0; k < n; k++) {
		if (buf[k] != '\n') {
			if (inlen[i] < sizeof(inbuf[i]) - 1)
				inbuf[i][inlen[i]++] = buf[k];
			continue;
		}
		inbuf[i][inlen[i]] = 0;
		inlen[i] = 0;
		if (!strcmp(inbuf[i], "quit"))
			return 1;
		counter++;
		snprintf(reply, sizeof(reply), "%ld\n", counter);
		if (write(pfd[i].fd, reply, strlen(reply)) < 0)
			say("error fd %d: write: %s", pfd[i].fd,
			    strerror(errno));
		say("served %ld", counter);
	}
	return 0;
}

static void send_line(int c, const char *line)
{
	if (write(c, line, strlen(line)) != (ssize_t)strlen(line)) {
		say("FAIL client write: %s", strerror(errno));
		exit(1);
	}
}

static void client(int port, long total, int delay_ms)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };
	long sent = 0, got = 0;
	char buf[64];
	size_t len = 0;
	int c = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("tcp_server", "client connect: %s", strerror(errno));
	for (; sent < 4 && sent < total; sent++)
		send_line(c, "r\n");
	while (got < total) {
		ssize_t n = read(c, buf + len, 1);

		if (n <= 0) {
			say("FAIL client read: %s", n ? strerror(errno) : "EOF");
			exit(1);
		}
		if (buf[len] != '\n' && ++len < sizeof(buf) - 1)
			continue;
		buf[len] = 0;
		len = 0;
		if (atol(buf) != got + 1) {
			say("FAIL client: reply %s after %ld", buf, got);
			exit(1);
		}
		say("reply %ld", ++got);
		if (sent < total) {
			sleep_ms(delay_ms);
			send_line(c, "r\n");
			sent++;
		}
	}
	send_line(c, "quit\n");
	say("OK client %ld", got);
	exit(0);
}

int main(int argc, char **argv)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
				    .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int s4, s6;

	if (argc != 3 && argc != 5)
		die("tcp_server", "usage: tcp_server PORT UNIX_PATH "
		    "[CLIENT_REQUESTS DELAY_MS]");
	signal(SIGPIPE, SIG_IGN);
	in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	in4.sin_port = htons(atoi(argv[1]));
	snprintf(un.sun_path, sizeof(un.sun_path), "%s", argv[2]);
	s4 = listen_on((struct sockaddr *)&in4, sizeof(in4), 0);
	s6 = listen_on((struct sockaddr *)&in6, sizeof(in6), 1);
	/* a second fd on the IPv4 listener, as after dup() */
	if (fcntl(s4, F_DUPFD, 20) < 0)
		die("tcp_server", "dup: %s", strerror(errno));
	listen_on((struct sockaddr *)&un, sizeof(un), 0);
	/* the abstract name "\0PATH" */
	memmove(un.sun_path + 1, un.sun_path, sizeof(un.sun_path) - 1);
	un.sun_path[0] = 0;
	listen_on((struct sockaddr *)&un, offsetof(struct sockaddr_un,
		  sun_path) + 1 + strlen(argv[2]), 0);
	in4.sin_port = 0;
	udp = socket(AF_INET, SOCK_DGRAM, 0);
	if (udp < 0 || bind(udp, (struct sockaddr *)&in4, sizeof(in4)) < 0)
		die("tcp_server", "udp: %s", strerror(errno));
	add(udp);
	nlisteners++;
	say("listening tcp %d tcp6 %d unix %s udp %d", port_of(s4),
	    port_of(s6), argv[2], port_of(udp));
	if (argc == 5 && fork() == 0)
		client(port_of(s4), atol(argv[3]), atoi(argv[4]));
	for (;;) {
		int n = poll(pfd, nfds, 200);

		if (n < 0 && errno != EINTR)
			die("tcp_server", "poll: %s", strerror(errno));
		for (int i = nfds - 1; n > 0 && i >= 0; i--) {
			if (!pfd[i].revents)
				continue;
			if (pfd[i].fd == udp) {
				answer_datagram();
			} else if (i < nlisteners) {
				int c = accept(pfd[i].fd, NULL, NULL);

				if (c >= 0) {
					add(c);
					say("accepted fd %d", c);
				} else if (errno != EAGAIN) {
					say("error fd %d: accept: %s",
					    pfd[i].fd, strerror(errno));
				}
			} else if (serve(i)) {
				say("OK tcp_server %ld", counter);
				return 0;
			}
		}
	}
}
