// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The main loop waits with epoll: every connection is registered once
 * (readable; writable too while its output queue holds bytes), so a
 * wake-up costs the connections that have something to say, not all of
 * them. With ppoll() each of a round's ~8n messages polled all n
 * connections again, O(n^2) per round (docs/performance.md, "Scale").
 * Level-triggered: what a wake-up leaves unread wakes the next one. A
 * closed descriptor leaves the set by itself (none is duplicated).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "coordinator.h"

static int epoll_fd = -1;
static int listener_watched = -1;	/* its fd in the set */

static int events_fd(void)
{
	if (epoll_fd < 0) {
		epoll_fd = epoll_create1(EPOLL_CLOEXEC);
		if (epoll_fd < 0) {
			coord_log("cannot create the epoll set: %s",
				  strerror(errno));
			exit(1);
		}
	}
	return epoll_fd;
}

static int watch(int op, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(events_fd(), op, fd, op == EPOLL_CTL_DEL ? NULL : &ev)
	       < 0 ? -errno : 0;
}

void conn_events_add(struct conn *c)
{
	int r = watch(EPOLL_CTL_ADD, c->fd, EPOLLIN, c);

	if (r < 0) {
		coord_log("%s: cannot watch the connection: %s; closing it",
			  c->peer, strerror(-r));
		c->eof = true;
	}
}

/* Writable events while (and only while) output is queued. */
void conn_events_update(struct conn *c)
{
	bool want = c->out.len && !c->eof && c->fd >= 0;

	if (want == c->watching_out || c->fd < 0)
		return;
	if (watch(EPOLL_CTL_MOD, c->fd, EPOLLIN | (want ? EPOLLOUT : 0),
		  c) == 0)
		c->watching_out = want;
}

/* The listener is left out while accepting is paused (out of fds); a
 * listener closed (or replaced) has left the set by itself. */
static void watch_listener(struct coordinator *co)
{
	int want = guard_listener_paused(co) ? -1 : co->listen_fd;

	if (want == listener_watched)
		return;
	if (listener_watched >= 0)
		watch(EPOLL_CTL_DEL, listener_watched, 0, NULL);
	listener_watched = -1;
	if (want >= 0 && watch(EPOLL_CTL_ADD, want, EPOLLIN, NULL) == 0)
		listener_watched = want;
}

static void on_conn_event(struct coordinator *co, struct conn *c,
			  uint32_t ev)
{
	if (ev & EPOLLOUT)
		conn_flush(c);
	if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
		conn_read(co, c);
}

/* Wait until something happens or deadline (ms, now_ms() clock; 0:
 * none), with wait_mask's signals let in; then handle it. */
void conn_events_wait(struct coordinator *co, int64_t deadline,
		      const sigset_t *wait_mask)
{
	struct epoll_event ev[256];
	bool accept_now = false;
	int timeout = -1, n;

	watch_listener(co);
	if (deadline) {
		int64_t left = deadline - now_ms();

		timeout = left < 0 ? 0 : left > INT32_MAX ? INT32_MAX
							  : (int)left;
	}
	n = epoll_pwait(events_fd(), ev, 256, timeout, wait_mask);
	if (n < 0) {
		if (errno != EINTR)
			coord_log("epoll_pwait failed: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		if (ev[i].data.ptr)
			on_conn_event(co, ev[i].data.ptr, ev[i].events);
		else
			accept_now = true;
	}
	if (accept_now)	/* after the others, as new ones are added */
		listener_accept(co);
}
