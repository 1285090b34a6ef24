/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shared_event_fds TURNS DELAY_MS: a parent and its forked child share
 * an eventfd, an epoll instance watching it and a timerfd (one open file
 * description each, inherited across fork), and talk only through them.
 * Each turn I the parent changes the epoll entry of the eventfd
 * (EPOLL_CTL_MOD, data I) and adds I to the eventfd; the child's
 * epoll_wait must report the eventfd with data I (the parent's change
 * of the shared interest list), its read must give I (the parent's
 * write); then the child arms the shared timerfd (1 ms) and the parent
 * reads its expiration. With copies instead of shared descriptions the
 * child would wait in vain: each wait is bounded (10 s), then "FAIL".
 * The parent prints "turn I", at the end "OK shared events TURNS".
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include "app_util.h"

#define WAIT_MS 10000

static int fds[3];		/* eventfd, epoll, timerfd: for fail() */

/* What the kernel says of each shared fd, one "FAIL ... fdinfo" line
 * each: which epoll targets, counter, ticks. */
static void dump_fdinfo(const char *who)
{
	for (int k = 0; k < 3; k++) {
		char path[64], buf[1024];
		ssize_t len;
		int fd;

		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fds[k]);
		fd = open(path, O_RDONLY);
		len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			close(fd);
		buf[len < 0 ? 0 : len] = 0;
		for (char *c = buf; *c; c++)
			if (*c == '\n' || *c == '\t')
				*c = ' ';
		say("FAIL %s fdinfo %d: %s", who, fds[k], buf);
	}
}

/* A bounded wait that returned N events: timed out, or failed (errno). */
static void fail(const char *who, const char *what, unsigned long i, int n)
{
	dump_fdinfo(who);
	if (n == 0)
		say("FAIL %s: %s in turn %lu (waited %d ms)", who, what, i,
		    WAIT_MS);
	else
		say("FAIL %s: %s in turn %lu (%s)", who, what, i,
		    strerror(errno));
	exit(1);
}

static void child_turns(int efd, int ep, int tfd, unsigned long turns)
{
	struct itimerspec arm = { .it_value = { 0, 1000000 } };

	for (unsigned long i = 1; i <= turns; i++) {
		struct epoll_event ev;
		uint64_t v;
		int n;

		while ((n = epoll_wait(ep, &ev, 1, WAIT_MS)) < 0 &&
		       errno == EINTR)
			;
		if (n != 1)
			fail("child", "no event from the shared epoll", i, n);
		expect_eq("child", "epoll data", (long)ev.data.u64, (long)i);
		while (read(efd, &v, sizeof(v)) < 0 && errno == EINTR)
			;
		expect_eq("child", "eventfd value", (long)v, (long)i);
		if (timerfd_settime(tfd, 0, &arm, NULL) < 0)
			die("shared_event_fds", "timerfd_settime: %s",
			    strerror(errno));
	}
	exit(0);
}

static void parent_turn(int efd, int ep, int tfd, unsigned long i)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = i };
	struct pollfd p = { .fd = tfd, .events = POLLIN };
	uint64_t v = i;
	int n;

	if (epoll_ctl(ep, EPOLL_CTL_MOD, efd, &ev) < 0 ||
	    write(efd, &v, sizeof(v)) != sizeof(v))
		die("shared_event_fds", "turn %lu: %s", i, strerror(errno));
	while ((n = poll(&p, 1, WAIT_MS)) < 0 && errno == EINTR)
		;
	if (n != 1)
		fail("parent", "the child's timer did not expire", i, n);
	while (read(tfd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
	expect_eq("parent", "timer expirations", (long)v, 1);
}

int main(int argc, char **argv)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	unsigned long turns, delay;
	int efd, ep, tfd, status;
	pid_t child;

	if (argc != 3)
		die("shared_event_fds", "usage: shared_event_fds TURNS "
		    "DELAY_MS");
	turns = parse_ulong("shared_event_fds", "TURNS", argv[1], 1, 100000);
	delay = parse_ulong("shared_event_fds", "DELAY_MS", argv[2], 0, 10000);
	efd = eventfd(0, 0);
	ep = epoll_create1(0);
	tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	fds[0] = efd;
	fds[1] = ep;
	fds[2] = tfd;
	if (efd < 0 || ep < 0 || tfd < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) < 0)
		die("shared_event_fds", "setup: %s", strerror(errno));
	fflush(stdout);
	child = fork();
	if (child < 0)
		die("shared_event_fds", "fork: %s", strerror(errno));
	if (child == 0)
		child_turns(efd, ep, tfd, turns);
	say("start");
	for (unsigned long i = 1; i <= turns; i++) {
		parent_turn(efd, ep, tfd, i);
		say("turn %lu", i);
		sleep_ms(delay);
	}
	if (waitpid(child, &status, 0) != child || status != 0)
		die("shared_event_fds", "child status %d", status);
	say("OK shared events %lu", turns);
	return 0;
}
