/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rest of saved TCP (and Unix stream) queues that did not fit into
 * the new connections (restart/restart_tcp_rest.c; include/ckpt/restart_plan.h,
 * ckpt_plan_tcp_rest). The restored process that holds a sending end
 * writes the rest into it after the restart barrier (every program of the
 * restart may run, so the receiver reads and makes room) and before its
 * own threads run (so its program's next bytes come after): the
 * receiver reads the saved queue in order, exactly once, then what the
 * sender writes next. Other holders of the sending end (it was shared
 * across fork) wait until it is done.
 *
 * The bound: the sender goes on as long as the receiver takes bytes; a
 * receiver that takes none for REST_STALL_MS (its program does not read,
 * or waits itself for something this process would do once running) gets
 * its connection reset, which both programs see as ECONNRESET, rather
 * than a stream with bytes missing; this is said on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>
#include "ckpt/restart_plan.h"
#include "internal.h"
#include "../protocol/client_internal.h"

#define REST_STALL_MS	30000
#define REST_STALL_TEXT	"30 s"
#define REST_POLL_MS	100

static struct ckpt_plan_tcp_rest rests[CKPT_PLAN_MAX_TCP_RESTS];
static int nrests;
static int rest_fd = -1, plan_fd = -1;

struct sending {
	int i;			/* in rests[] */
	int fd;			/* the program's fd of the sending end */
	int64_t last_progress_ms;
};

static size_t rest_offset(int i)
{
	return offsetof(struct ckpt_restart_plan, tcp_rests) +
	       i * sizeof(rests[0]);
}

int tcp_rest_take(int fd, int (*move_fd)(int))
{
	struct { uint32_t n; int32_t fd; } head;
	size_t size;

	nrests = 0;
	rest_fd = plan_fd = -1;
	if (pread(fd, &head, sizeof(head), offsetof(struct ckpt_restart_plan,
						    ntcp_rests)) != sizeof(head))
		return 0;	/* a plan without them */
	if (head.n > CKPT_PLAN_MAX_TCP_RESTS)
		return -EPROTO;
	size = head.n * sizeof(rests[0]);
	if (!head.n)
		return 0;
	if (pread(fd, rests, size, rest_offset(0)) != (ssize_t)size)
		return -EIO;
	rest_fd = move_fd(head.fd);
	plan_fd = move_fd(fcntl(fd, F_DUPFD_CLOEXEC, 3));
	if (fcntl(rest_fd, F_GETFD) < 0 || plan_fd < 0)
		return -EBADF;	/* the memfd did not come through the loader */
	nrests = (int)head.n;
	return 0;
}

static void publish(int i)
{
	if (pwrite(plan_fd, &rests[i], sizeof(rests[i]), rest_offset(i)) !=
	    sizeof(rests[i]))
		ckpt_log("cannot tell the restart plan how far the rest of a "
			 "TCP queue was sent: %s", strerror(errno));
}

/* Send what the socket takes now; 1 when all is sent, 0 to go on,
 * -errno on failure. */
static int send_some(struct sending *s)
{
	static char buf[65536];
	struct ckpt_plan_tcp_rest *e = &rests[s->i];

	while (e->sent < e->size) {
		uint64_t want = e->size - e->sent;
		ssize_t n = pread(rest_fd, buf, want < sizeof(buf) ?
				  want : sizeof(buf), e->offset + e->sent), w;

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		w = send(s->fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		e->sent += w;
		s->last_progress_ms = ckpt_cc_now_ms();
		if (w < n)
			break;
	}
	publish(s->i);
	return e->sent == e->size;
}

static void give_up(struct sending *s, const char *why)
{
	struct ckpt_plan_tcp_rest *e = &rests[s->i];
	struct sockaddr unspec = { .sa_family = AF_UNSPEC };
	/* TCP: sends a reset; a Unix stream has none: both ends shut */
	int reset = connect(s->fd, &unspec, sizeof(unspec)) == 0;

	if (!reset)
		shutdown(s->fd, SHUT_RDWR);
	ckpt_log("fd %d: the last %llu bytes saved in the queue of its peer "
		 "could not be put back (%s); the %s, so that both programs "
		 "see an error rather than a stream with bytes missing",
		 s->fd, (unsigned long long)(e->size - e->sent), why,
		 reset ? "TCP connection is reset" :
			 "connection is shut down both ways");
	e->state = CKPT_PLAN_REST_GIVEN_UP;
	publish(s->i);
}

/* Poll the ends still sending; each finished one leaves the list. */
static void send_round(struct sending *s, int *n)
{
	struct pollfd p[CKPT_PLAN_MAX_TCP_RESTS];

	for (int j = 0; j < *n; j++)
		p[j] = (struct pollfd){ .fd = s[j].fd, .events = POLLOUT };
	poll(p, *n, REST_POLL_MS);
	for (int j = 0; j < *n; j++) {
		int r = p[j].revents ? send_some(&s[j]) : 0;

		if (r == 0 && ckpt_cc_now_ms() - s[j].last_progress_ms >
		    REST_STALL_MS)
			give_up(&s[j], "the peer read nothing for "
				REST_STALL_TEXT);
		else if (r < 0)
			give_up(&s[j], strerror(-r));
		else if (r == 1) {
			rests[s[j].i].state = CKPT_PLAN_REST_DONE;
			publish(s[j].i);
		}
		if (r != 0 || rests[s[j].i].state) {	/* done with it */
			--*n;
			s[j] = s[*n];
			p[j--] = p[*n];
		}
	}
}

static void send_own_rests(void)
{
	static struct sending s[CKPT_PLAN_MAX_TCP_RESTS];
	int n = 0;

	for (int i = 0; i < nrests; i++) {
		int fd = rests[i].vpid == ckpt.vpid ?
			 files_saved_socket_fd(rests[i].ino) : -1;

		if (fd >= 0)
			s[n++] = (struct sending){ i, fd, ckpt_cc_now_ms() };
	}
	while (n > 0)
		send_round(s, &n);
}

/* Another process sends into an end this process holds: wait while it
 * makes progress. */
static void wait_for_sender(int i)
{
	struct ckpt_plan_tcp_rest e;
	struct timespec nap = { 0, 1000000 };
	uint64_t seen = 0;
	int64_t last = ckpt_cc_now_ms();

	while (pread(plan_fd, &e, sizeof(e), rest_offset(i)) == sizeof(e) &&
	       !e.state) {
		if (e.sent != seen) {
			seen = e.sent;
			last = ckpt_cc_now_ms();
		} else if (ckpt_cc_now_ms() - last > REST_STALL_MS + 5000) {
			ckpt_log("process %d did not finish putting back the "
				 "queue of a TCP connection this process "
				 "shares; going on", (int)e.vpid);
			return;
		}
		nanosleep(&nap, NULL);
	}
}

static void close_own(int *fd)
{
	if (*fd < 0)
		return;
	ckpt_mark_own_fd(*fd, 0);
	close(*fd);
	*fd = -1;
}

void tcp_rest_send(void)
{
	if (!nrests)
		return;
	send_own_rests();
	for (int i = 0; i < nrests; i++)
		if (rests[i].vpid != ckpt.vpid &&
		    files_saved_socket_fd(rests[i].ino) >= 0)
			wait_for_sender(i);
	close_own(&rest_fd);
	close_own(&plan_fd);
	nrests = 0;
}
