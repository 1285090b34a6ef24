// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_command's side of template snapshots (docs/embedding.md,
 * "Template snapshots"): the coordinator answers "template PID IMAGE"
 * for a snapshot kept as a template process, and ckpt_command gives the
 * template its order itself (sigqueue, CKPT_TEMPLATE_SIGNAL). The
 * template takes the write end of a pipe from this process
 * (pidfd_getfd) and reports on it: for --restore, the restored process's
 * pid, then its wait status, which ckpt_command ends with (the restored
 * process runs on ckpt_command's stdio, as a restart's does on
 * ckpt_restart's); for --from-snapshot, that the image is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/protocol.h"
#include "snapshot_files.h"

#define STARTED_WAIT_MS		10000
#define WRITTEN_WAIT_MS		600000

struct template_ref {
	pid_t pid;
	char image[4096];
};

int snapshot_is_template(const char *text)
{
	return !strncmp(text, "template ", 9);
}

static int parse_ref(const char *text, struct template_ref *t)
{
	char *end;
	long pid = strtol(text + 9, &end, 10);
	size_t n;

	if (pid <= 0 || *end != ' ') {
		fprintf(stderr, "ckpt_command: the coordinator's answer "
			"'%.80s' names no template process\n", text);
		return -EPROTO;
	}
	t->pid = (pid_t)pid;
	snprintf(t->image, sizeof(t->image), "%s", end + 1);
	n = strcspn(t->image, "\n");
	t->image[n] = 0;
	return 0;
}

/* One report, waiting at most ms (-1: as long as it takes): 0, or
 * -errno (-EPIPE: the template went away without a word). */
static int read_report(int fd, int ms, struct ckpt_template_report *rep)
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

/* Send the order; the template takes our end of the pipe; 0 and *rfd
 * the read end, or -errno. */
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
static int first_report(const struct template_ref *t, int what, int *rfd,
			int ms, struct ckpt_template_report *rep)
{
	int wfd = send_order(t, what, rfd), r;

	if (wfd < 0)
		return wfd;
	r = read_report(*rfd, ms, rep);
	close(wfd);
	if (r == 0 && rep->event == CKPT_TEMPLATE_FAILED)
		r = rep->value < 0 ? rep->value : -EIO;
	if (r < 0)
		close(*rfd);
	return r;
}

static void order_failed(const struct template_ref *t, const char *what,
			 int r)
{
	fprintf(stderr, "ckpt_command: the snapshot's template process %d "
		"%s: %s\n", (int)t->pid, what,
		r == -ESRCH ? "it is gone" : r == -EPIPE ?
		"it ended without an answer" : r == -ETIMEDOUT ?
		"it did not answer in time (is it still running?)" :
		strerror(-r));
}

static volatile pid_t restored_pid;

/* The restored process is no child of ckpt_command, nor in its process
 * group: what a terminal or a supervisor sends ckpt_command goes on to
 * it. */
static void pass_on(int sig)
{
	if (restored_pid > 0)
		kill(restored_pid, sig);
}

static void pass_on_signals(pid_t pid)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT,
				    SIGUSR1, SIGUSR2 };
	struct sigaction sa = { .sa_handler = pass_on,
				.sa_flags = SA_RESTART };

	restored_pid = pid;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* End as the restored process ended: its exit status, or its signal. */
static int end_like(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return 1;
}

/* --restore of a template snapshot (the computation is killed already):
 * returns the exit code of ckpt_command. */
int snapshot_template_restore(const char *text, int stopped)
{
	struct template_ref t;
	struct ckpt_template_report rep;
	int rfd, r;

	if (parse_ref(text, &t) < 0)
		return 1;
	r = first_report(&t, CKPT_TEMPLATE_RESTORE |
			 (stopped ? CKPT_TEMPLATE_F_STOPPED : 0), &rfd,
			 STARTED_WAIT_MS, &rep);
	if (r < 0) {
		order_failed(&t, "could not restore it", r);
		return 1;
	}
	if (stopped)
		fprintf(stderr, "ckpt_command: restored process %d, stopped "
			"(SIGSTOP): attach a debugger, or send it SIGCONT\n",
			rep.value);
	pass_on_signals(rep.value);
	/* the program's own run: no limit */
	do
		r = read_report(rfd, -1, &rep);
	while (r == 0 && rep.event != CKPT_TEMPLATE_EXITED);
	close(rfd);
	if (r < 0) {
		order_failed(&t, "lost the restored process", r);
		return 1;
	}
	return end_like(rep.value);
}

/* --checkpoint --from-snapshot of a template snapshot: the template
 * writes the image, which is copied into dir. */
int snapshot_template_copy(const char *text, const char *dir)
{
	struct template_ref t;
	struct ckpt_template_report rep;
	char list[4200];
	int rfd, r;

	if (parse_ref(text, &t) < 0)
		return 1;
	r = first_report(&t, CKPT_TEMPLATE_WRITE, &rfd, WRITTEN_WAIT_MS,
			 &rep);
	while (r == 0 && rep.event != CKPT_TEMPLATE_WRITTEN)
		r = read_report(rfd, WRITTEN_WAIT_MS, &rep);
	if (r == 0)
		close(rfd);
	if (r == 0 && rep.value < 0)
		r = rep.value;
	if (r < 0) {
		order_failed(&t, "could not write the image", r);
		return 1;
	}
	snprintf(list, sizeof(list), "%s\n", t.image);
	return snapshot_copy_images(list, dir) < 0 ? 1 : 0;
}
