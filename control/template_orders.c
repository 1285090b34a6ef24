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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/control.h"

#include "template_orders.h"

#define WRITTEN_WAIT_MS		600000
#define TREE_MAX		1024

/* One template snapshot's answer: a single line "template PID IMAGE". */
int template_reply_is_template(const char *text)
{
	const char *nl = strchr(text, '\n');

	return !strncmp(text, "template ", 9) && (!nl || !nl[1]);
}

/* A tree's answer: some of its lines "template PID IMAGE". */
int template_reply_has_templates(const char *text)
{
	return !strncmp(text, "template ", 9) || strstr(text, "\ntemplate ");
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

/* RESTORE with stdio[0..2] as the restored process's stdio (the
 * template takes the requester's fds 0-2 when it reads the order, so
 * ours are swapped for them meanwhile): 0 with the STARTED report in
 * *rep and *rfd the read end for the later ones, or -errno. */
int template_restore_on(const struct template_ref *t, const int stdio[3],
			int ms, int *rfd, struct ckpt_template_report *rep)
{
	int saved[3], r;

	for (int fd = 0; fd < 3; fd++) {
		saved[fd] = dup(fd);
		if (saved[fd] < 0 || dup2(stdio[fd], fd) < 0) {
			r = -errno;
			while (fd >= 0) {
				if (saved[fd] >= 0) {
					dup2(saved[fd], fd);
					close(saved[fd]);
				}
				fd--;
			}
			return r;
		}
	}
	r = template_order(t, CKPT_TEMPLATE_RESTORE, rfd, ms, rep);
	for (int fd = 0; fd < 3; fd++) {
		dup2(saved[fd], fd);
		close(saved[fd]);
	}
	return r;
}

/* A restored process answers before it has joined the coordinator
 * again, and a restore kills only processes that joined: until the
 * coordinator lists one "restarted=yes" (0), ms passed (-ETIMEDOUT), or
 * a list failed (its -errno, *err said). */
int template_wait_restored_joined(struct ckpt_control *c, int ms,
				  struct ckpt_control_error *err)
{
	struct timespec slice = { 0, 2000000 };

	for (int waited = 0; waited <= ms; waited += 2) {
		struct ckpt_control_reply rep;
		int joined, r = ckpt_control_list(c, &rep, err);

		if (r < 0)
			return r;
		joined = strstr(rep.text, "restarted=yes") != NULL;
		ckpt_control_reply_free(&rep);
		if (joined)
			return 0;
		nanosleep(&slice, NULL);
	}
	return -ETIMEDOUT;
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

/* The orders of one line of a tree's answer, while they are carried out. */
struct tree_write {
	struct template_ref t;
	int rfd, wfd;		/* -1: a bare image path, nothing to order */
	int pidfd;		/* the template's: readable once it ends */
};

/* Until a report is there (0), or the template ended without one
 * (-ESRCH: our own write end keeps the pipe open, so no EOF would say
 * it), or ms passed. */
static int wait_report_or_end(const struct tree_write *w, int ms)
{
	struct pollfd p[2] = { { w->rfd, POLLIN, 0 }, { w->pidfd, POLLIN, 0 } };
	int r;

	while ((r = poll(p, 2, ms)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	return p[0].revents ? 0 : -ESRCH;
}

static int write_report(struct tree_write *w)
{
	struct ckpt_template_report rep;
	int r;

	do
		r = wait_report_or_end(w, WRITTEN_WAIT_MS) ?:
		    template_read_report(w->rfd, WRITTEN_WAIT_MS, &rep);
	while (r == 0 && rep.event != CKPT_TEMPLATE_WRITTEN &&
	       rep.event != CKPT_TEMPLATE_FAILED);
	if (r == 0 && rep.value < 0)
		r = rep.value;
	else if (r == 0 && rep.event == CKPT_TEMPLATE_FAILED)
		r = -EIO;
	return r;
}

static int close_tree_orders(struct tree_write *w, int n, int r)
{
	for (int i = 0; i < n; i++) {
		if (w[i].rfd < 0)
			continue;
		close(w[i].wfd);
		close(w[i].rfd);
		if (w[i].pidfd >= 0)
			close(w[i].pidfd);
	}
	return r;
}

/* Every line: its order sent (all at once: the templates write in
 * parallel); w[i].t.image the path either way. */
static int send_tree_orders(char *text, struct tree_write *w, int max,
			    pid_t *failed)
{
	char *save, *l = strtok_r(text, "\n", &save);
	int n = 0;

	for (; l && n < max; l = strtok_r(NULL, "\n", &save), n++) {
		w[n].rfd = w[n].wfd = w[n].pidfd = -1;
		if (strncmp(l, "template ", 9)) {
			snprintf(w[n].t.image, sizeof(w[n].t.image), "%s", l);
			continue;
		}
		if (template_parse(l, &w[n].t) < 0)
			return close_tree_orders(w, n, -EPROTO);
		w[n].wfd = send_order(&w[n].t, CKPT_TEMPLATE_WRITE, &w[n].rfd);
		if (w[n].wfd >= 0)
			w[n].pidfd = (int)syscall(SYS_pidfd_open, w[n].t.pid,
						  0);
		if (w[n].wfd < 0 || w[n].pidfd < 0) {
			int r = w[n].wfd < 0 ? w[n].wfd : -errno;

			*failed = w[n].t.pid;
			return close_tree_orders(w, n + (w[n].wfd >= 0), r);
		}
	}
	return l ? close_tree_orders(w, n, -E2BIG) : n;
}

/* A tree's answer becomes its images (one path a line, as a snapshot of
 * images answers), each template writing its own (a template that wrote
 * it already answers at once): 0, or -errno with *failed the template
 * that failed. */
int template_tree_images(char **text, pid_t *failed)
{
	struct tree_write *w = calloc(TREE_MAX, sizeof(*w));
	size_t len = strlen(*text) + 1;
	char *out = malloc(len), *copy = strdup(*text);
	int n, r;

	*failed = 0;
	n = w && out && copy ? send_tree_orders(copy, w, TREE_MAX, failed) :
	    -ENOMEM;
	r = n < 0 ? n : 0;
	for (int i = 0; i < (n < 0 ? 0 : n); i++) {
		int e = w[i].rfd < 0 ? 0 : write_report(&w[i]);

		if (e < 0 && r == 0) {
			r = e;
			*failed = w[i].t.pid;
		}
	}
	close_tree_orders(w, n < 0 ? 0 : n, 0);
	if (r == 0) {
		out[0] = 0;
		for (int i = 0; i < n; i++)
			strcat(strcat(out, w[i].t.image), "\n");
		free(*text);
		*text = out;
		out = NULL;
	}
	free(out);
	free(copy);
	free(w);
	return r;
}
