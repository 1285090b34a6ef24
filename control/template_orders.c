// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Orders to a template snapshot's process (docs/embedding.md, "Template
 * snapshots"), for libckpt-control and ckpt_command: the coordinator
 * answers "template PID IMAGE" for such a snapshot, and the order goes
 * from the caller to the template itself (sigqueue, CKPT_TEMPLATE_SIGNAL).
 * The template takes the write end of a pipe from the caller
 * (pidfd_getfd) and reports on it. Prints nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "template_orders.h"

#define WRITTEN_WAIT_MS		600000

int template_reply_is_template(const char *text)
{
	return !strncmp(text, "template ", 9);
}

int template_parse(const char *text, struct template_ref *t)
{
	char *end;
	long pid = strtol(text + 9, &end, 10);
	size_t n;

	if (!template_reply_is_template(text) || pid <= 0 || *end != ' ')
		return -EPROTO;
	t->pid = (pid_t)pid;
	snprintf(t->image, sizeof(t->image), "%s", end + 1);
	n = strcspn(t->image, "\n");
	t->image[n] = 0;
	return 0;
}

/* One report, waiting at most ms (-1: as long as it takes): 0, or
 * -errno (-EPIPE: the template went away without a word). */
int template_read_report(int fd, int ms, struct ckpt_template_report *rep)
{
	struct pollfd p = { fd, POLLIN, 0 };
	size_t got = 0;

	while (got < sizeof(*rep)) {
		int r = poll(&p, 1, ms);
		ssize_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -ETIMEDOUT;
		n = read(fd, (char *)rep + got, sizeof(*rep) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		got += n;
	}
	return 0;
}

/* Send the order; the template takes our end of the pipe; the write end
 * (*rfd the read end), or -errno. */
static int send_order(const struct template_ref *t, int what, int *rfd)
{
	union sigval v;
	int p[2], r;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	/* Yama: the template may take descriptors from us */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	v.sival_ptr = (void *)(uintptr_t)CKPT_TEMPLATE_ORDER(what, getpid(),
							     p[1]);
	if (sigqueue(t->pid, CKPT_TEMPLATE_SIGNAL, v) < 0) {
		r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	*rfd = p[0];
	return p[1];
}

/* First report: once it is read, the template holds the write end and
 * ours goes (so that the template's end alone keeps it open). */
int template_order(const struct template_ref *t, int what, int *rfd,
		   int ms, struct ckpt_template_report *rep)
{
	int wfd = send_order(t, what, rfd), r;

	if (wfd < 0)
		return wfd;
	r = template_read_report(*rfd, ms, rep);
	close(wfd);
	if (r == 0 && rep->event == CKPT_TEMPLATE_FAILED)
		r = rep->value < 0 ? rep->value : -EIO;
	if (r < 0)
		close(*rfd);
	return r;
}

const char *template_strerror(int r)
{
	return r == -ESRCH ? "it is gone" : r == -EPIPE ?
	       "it ended without an answer" : r == -ETIMEDOUT ?
	       "it did not answer in time (is it still running?)" :
	       strerror(-r);
}

/* The template writes the snapshot's ordinary image at t->image: 0, or
 * -errno. */
int template_write_image(const struct template_ref *t)
{
	struct ckpt_template_report rep;
	int rfd, r;

	r = template_order(t, CKPT_TEMPLATE_WRITE, &rfd, WRITTEN_WAIT_MS,
			   &rep);
	while (r == 0 && rep.event != CKPT_TEMPLATE_WRITTEN)
		r = template_read_report(rfd, WRITTEN_WAIT_MS, &rep);
	if (r == 0)
		close(rfd);
	return r == 0 && rep.value < 0 ? rep.value : r;
}
