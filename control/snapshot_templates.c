// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_command's side of restoring a template snapshot (docs/embedding.md,
 * "Template snapshots"): the order goes to the template itself
 * (template_orders.c); it reports the restored process's pid, then its
 * wait status, which ckpt_command ends with (the restored process runs
 * on ckpt_command's stdio, as a restart's does on ckpt_restart's).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "snapshot_files.h"
#include "template_orders.h"

#define STARTED_WAIT_MS		10000

int snapshot_is_template(const char *text)
{
	return template_reply_is_template(text);
}

int snapshot_has_templates(const char *text)
{
	return template_reply_has_templates(text);
}

/* --restore of a tree's templates (docs/embedding.md, "Template snapshots
 * of a tree"): each writes its image (once), then ckpt_restart rebuilds
 * the tree from them as from any images. Returns only on failure. */
int snapshot_tree_restore(char **text, int stopped)
{
	pid_t failed;
	int r = template_tree_images(text, &failed);

	if (r < 0 && failed)
		fprintf(stderr, "ckpt_command: the snapshot's template process "
			"%d could not write its image: %s\n", (int)failed,
			template_strerror(r));
	else if (r < 0)
		fprintf(stderr, "ckpt_command: the snapshot's templates could "
			"not write their images: %s\n", template_strerror(r));
	if (r < 0)
		return 1;
	snapshot_exec_restart(*text, stopped);
	return 1;
}

static void order_failed(const struct template_ref *t, const char *what,
			 int r)
{
	fprintf(stderr, "ckpt_command: the snapshot's template process %d "
		"%s: %s\n", (int)t->pid, what, template_strerror(r));
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

	if (template_parse(text, &t) < 0) {
		fprintf(stderr, "ckpt_command: the coordinator's answer "
			"'%.80s' names no template process\n", text);
		return 1;
	}
	r = template_order(&t, CKPT_TEMPLATE_RESTORE |
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
		r = template_read_report(rfd, -1, &rep);
	while (r == 0 && rep.event != CKPT_TEMPLATE_EXITED);
	close(rfd);
	if (r < 0) {
		order_failed(&t, "lost the restored process", r);
		return 1;
	}
	return end_like(rep.value);
}
