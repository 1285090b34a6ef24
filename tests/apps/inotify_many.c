/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * inotify_many DIR TICKS PERIOD_MS: make 24 files in DIR and watch each
 * (IN_MODIFY: watch descriptors 1 to 24, printed in hex by the kernel's
 * fdinfo from 10 on), remove watches 3, 4 and 5; then at each tick write
 * to the next watched file and wait (bounded, 5 s) for its event, which
 * must name that file's watch descriptor: "tick K wd W" or "FAIL ...",
 * exit 1. "OK inotify_many" at the end.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>

#include "app_util.h"

#define ME "inotify_many"
#define FILES 24

static int wds[FILES + 1];

static void write_file(const char *dir, int i, unsigned long tick)
{
	char path[4096], text[32];
	int fd, n;

	snprintf(path, sizeof(path), "%s/f%d", dir, i);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	n = snprintf(text, sizeof(text), "%lu\n", tick);
	if (fd < 0 || write(fd, text, n) != n)
		die(ME, "%s: %s", path, strerror(errno));
	close(fd);
}

/* The watch descriptor of the next IN_MODIFY event, -1 if none came. */
static int next_modify(int in)
{
	struct pollfd p = { .fd = in, .events = POLLIN };
	static char pending[4096] __attribute__((aligned(8)));
	static ssize_t have, at;

	for (;;) {
		while (at < have) {
			struct inotify_event *e = (void *)(pending + at);

			at += sizeof(*e) + e->len;
			if (e->mask & IN_MODIFY)
				return e->wd;
		}
		if (poll(&p, 1, 5000) <= 0)
			return -1;
		at = 0;
		have = read(in, pending, sizeof(pending));
		if (have <= 0)
			return -1;
	}
}

int main(int argc, char **argv)
{
	unsigned long ticks, period;
	int in, i = 0;

	if (argc != 4)
		die(ME, "usage: %s DIR TICKS PERIOD_MS", ME);
	ticks = strtoul(argv[2], NULL, 10);
	period = strtoul(argv[3], NULL, 10);
	in = inotify_init1(IN_CLOEXEC);
	if (in < 0)
		die(ME, "inotify_init1: %s", strerror(errno));
	for (int f = 1; f <= FILES; f++) {
		char path[4096];

		write_file(argv[1], f, 0);
		snprintf(path, sizeof(path), "%s/f%d", argv[1], f);
		wds[f] = inotify_add_watch(in, path, IN_MODIFY);
		if (wds[f] < 0)
			die(ME, "inotify_add_watch %s: %s", path, strerror(errno));
	}
	for (int f = 3; f <= 5; f++) {
		inotify_rm_watch(in, wds[f]);
		wds[f] = -1;
	}
	for (unsigned long k = 1; k <= ticks; k++) {
		int wd;

		do
			i = i % FILES + 1;
		while (wds[i] < 0);
		write_file(argv[1], i, k);
		wd = next_modify(in);
		if (wd != wds[i]) {
			say("FAIL tick %lu: file f%d (wd %d) gave wd %d", k, i,
			    wds[i], wd);
			return 1;
		}
		say("tick %lu wd %d", k, wd);
		sleep_ms(period);
	}
	say("OK %s", ME);
	return 0;
}
