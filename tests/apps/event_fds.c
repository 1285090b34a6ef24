/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * event_fds MODE DIR ITER DELAY_MS: hold descriptors and count.
 * MODE "events": an epoll instance, an eventfd, a UDP socket and a TCP
 * socket listening on 127.0.0.1 (port 0), and a forked child holding a
 * timerfd; prints "fds epoll E eventfd V udp U udpport UP tcp T tcpport TP"
 * and "child C timerfd F". MODE "plain": a regular file in DIR, a
 * directory and a pipe only; prints "fds file F dir D pipe R W".
 * Then "tick I" up to ITER every DELAY_MS (the child too: "child tick
 * I"), and "OK event_fds". ckpt cannot restore the sockets of the first
 * kind yet: the checkpoint says so (item 8); the epoll, eventfd and
 * timerfd are restored (none said); the descriptors are not used after
 * that.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include "app_util.h"

static int inet_socket(int type, int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, type, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 4) < 0) ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		die("event_fds", "socket: %s", strerror(errno));
	*port = ntohs(a.sin_port);
	return fd;
}

static void count(const char *who, unsigned long iters, unsigned long delay)
{
	for (unsigned long i = 1; i <= iters; i++) {
		say("%stick %lu", who, i);
		sleep_ms(delay);
	}
}

static void hold_events(unsigned long iters, unsigned long delay)
{
	int ep = epoll_create1(0), ev = eventfd(0, 0), up, tp, status = 0;
	int udp = inet_socket(SOCK_DGRAM, &up), tcp = inet_socket(SOCK_STREAM,
								    &tp);
	pid_t child;

	if (ep < 0 || ev < 0)
		die("event_fds", "epoll/eventfd: %s", strerror(errno));
	say("fds epoll %d eventfd %d udp %d udpport %d tcp %d tcpport %d", ep,
	    ev, udp, up, tcp, tp);
	child = fork();
	if (child < 0)
		die("event_fds", "fork: %s", strerror(errno));
	if (child == 0) {
		int tfd = timerfd_create(CLOCK_MONOTONIC, 0);

		if (tfd < 0)
			die("event_fds", "timerfd: %s", strerror(errno));
		say("child %d timerfd %d", (int)getpid(), tfd);
		count("child ", iters, delay);
		_exit(0);
	}
	count("", iters, delay);
	if (waitpid(child, &status, 0) != child || status != 0) {
		say("FAIL child status %#x", status);
		exit(1);
	}
}

static void hold_plain(const char *dir, unsigned long iters,
		       unsigned long delay)
{
	char path[4096];
	int p[2], f, d;

	snprintf(path, sizeof(path), "%s/plain.txt", dir);
	f = open(path, O_RDWR | O_CREAT, 0600);
	d = open(dir, O_RDONLY | O_DIRECTORY);
	if (f < 0 || d < 0 || pipe(p) < 0)
		die("event_fds", "open: %s", strerror(errno));
	say("fds file %d dir %d pipe %d %d", f, d, p[0], p[1]);
	count("", iters, delay);
}

int main(int argc, char **argv)
{
	unsigned long iters, delay;

	if (argc != 5)
		die("event_fds", "usage: event_fds events|plain DIR ITER "
		    "DELAY_MS");
	iters = parse_ulong("event_fds", "ITER", argv[3], 1, 1000000);
	delay = parse_ulong("event_fds", "DELAY_MS", argv[4], 0, 10000);
	if (!strcmp(argv[1], "events"))
		hold_events(iters, delay);
	else
		hold_plain(argv[2], iters, delay);
	say("OK event_fds");
	return 0;
}
