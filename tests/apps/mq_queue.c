/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mq_queue N PAUSE_MS: a POSIX message queue (mq_open, named, then
 * unlinked: what a program that keeps it to itself does), a kind ckpt
 * does not save yet. Prints "mq fd FD", then each step sends two
 * messages of different priorities and receives the higher one first:
 * "tick K ok" while the queue works, "tick K error: ..." once it does
 * not (after a restart it is /dev/null); then "done".
 */
#include <fcntl.h>
#include <mqueue.h>

#include "app_util.h"

#define PROG "mq_queue"

static int step(mqd_t q, unsigned long k)
{
	char msg[64], got[64];
	unsigned prio = 0;
	ssize_t n;

	snprintf(msg, sizeof(msg), "high %lu", k);
	if (mq_send(q, "low", 4, 1) < 0 || mq_send(q, msg, strlen(msg) + 1, 5) < 0)
		return -errno;
	n = mq_receive(q, got, sizeof(got), &prio);
	if (n < 0)
		return -errno;
	if (prio != 5 || strcmp(got, msg))
		return -EPROTO;
	n = mq_receive(q, got, sizeof(got), &prio);
	if (n < 0)
		return -errno;
	return prio == 1 && !strcmp(got, "low") ? 0 : -EPROTO;
}

int main(int argc, char **argv)
{
	struct mq_attr attr = { .mq_maxmsg = 4, .mq_msgsize = 64 };
	char name[64];
	unsigned long n, pause_ms;
	mqd_t q;

	if (argc != 3)
		die(PROG, "usage: %s N PAUSE_MS", PROG);
	n = strtoul(argv[1], NULL, 10);
	pause_ms = strtoul(argv[2], NULL, 10);
	snprintf(name, sizeof(name), "/ckpt-test-%d", (int)getpid());
	q = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
	if (q == (mqd_t)-1)
		die(PROG, "mq_open: %s", strerror(errno));
	mq_unlink(name);
	say("mq fd %d", (int)q);
	for (unsigned long k = 1; k <= n; k++) {
		int r = step(q, k);

		if (r < 0)
			say("tick %lu error: %s", k, strerror(-r));
		else
			say("tick %lu ok", k);
		sleep_ms(pause_ms);
	}
	say("done");
	return 0;
}
