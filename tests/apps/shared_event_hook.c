/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shared_event_hook WRITER DIR: a parent and its forked child share an
 * eventfd and an epoll instance watching it (one open file description
 * each, inherited across fork). WRITER ("parent" or "child") has a
 * before-checkpoint hook (ckpt.h) that waits 300 ms, by when the other
 * process has been stopped for the checkpoint, then adds 7 to the
 * eventfd and sets the epoll entry's data to 7: state one holder changed
 * after the other was stopped, which the image must hold. Both then wait
 * (at most 60 s) for the file DIR/go; the other process reads the epoll
 * (data) and the eventfd (count) and prints "data D count N"; the parent
 * ends with "OK". Each prints "ready" once its part is set up.
 */
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "app_util.h"
#include "ckpt.h"

static int efd, ep;
static const char *dir;

static void before_checkpoint(enum ckpt_event ev, void *arg)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 7 };
	uint64_t v = 7;

	(void)ev;
	(void)arg;
	sleep_ms(300);
	if (epoll_ctl(ep, EPOLL_CTL_MOD, efd, &e) < 0 ||
	    write(efd, &v, sizeof(v)) != sizeof(v))
		die("shared_event_hook", "hook: %s", strerror(errno));
}

static void wait_for_go(void)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/go", dir);
	for (int i = 0; i < 6000 && access(path, F_OK) < 0; i++)
		sleep_ms(10);
	if (access(path, F_OK) < 0)
		die("shared_event_hook", "%s did not appear in 60 s", path);
}

static void read_shared(void)
{
	struct epoll_event e;
	uint64_t v = 0;
	int n = epoll_wait(ep, &e, 1, 1000);

	if (n != 1) {
		say("FAIL no event from the shared epoll (%d: %s)", n,
		    n < 0 ? strerror(errno) : "timed out");
		exit(1);
	}
	if (read(efd, &v, sizeof(v)) != sizeof(v)) {
		say("FAIL data %llu, reading the eventfd: %s",
		    (unsigned long long)e.data.u64, strerror(errno));
		exit(1);
	}
	say("data %llu count %llu", (unsigned long long)e.data.u64,
	    (unsigned long long)v);
}

/* One process's part: the writer hooks the checkpoint, the other reads
 * once told to go. */
static void part(int writer)
{
	if (writer && ckpt_hook_add(CKPT_EVENT_BEFORE_CHECKPOINT,
				    before_checkpoint, NULL) < 0)
		die("shared_event_hook", "ckpt_hook_add failed: not under "
		    "ckpt_launch?");
	say("ready");
	wait_for_go();
	if (!writer)
		read_shared();
}

int main(int argc, char **argv)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 0 };
	int parent_writes, status;
	pid_t child;

	if (argc != 3 || (strcmp(argv[1], "parent") &&
			  strcmp(argv[1], "child")))
		die("shared_event_hook", "usage: shared_event_hook "
		    "parent|child DIR");
	parent_writes = !strcmp(argv[1], "parent");
	dir = argv[2];
	efd = eventfd(0, EFD_NONBLOCK);
	ep = epoll_create1(0);
	if (efd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e) < 0)
		die("shared_event_hook", "setup: %s", strerror(errno));
	fflush(stdout);
	child = fork();
	if (child < 0)
		die("shared_event_hook", "fork: %s", strerror(errno));
	if (child == 0) {
		part(!parent_writes);
		return 0;
	}
	part(parent_writes);
	if (waitpid(child, &status, 0) != child || status != 0)
		die("shared_event_hook", "child status %d", status);
	say("OK");
	return 0;
}
