/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * inotify_watch DIR TICKS PERIOD_MS: one inotify instance watching
 * DIR/a (IN_CREATE, by absolute path) and, after a watch on DIR/x was
 * added and removed (a gap in the numbers), b (IN_CREATE | IN_ONLYDIR,
 * relative to DIR, the working directory). Prints "wds A B", then each
 * tick creates DIR/a/fI and DIR/b/gI and waits for both IN_CREATE events,
 * which must come with the watch descriptor of their directory and their
 * name ("tick I"). Events of a tick that do not come within 3 s are lost
 * ("lost I" before its tick line: a restart loses the events queued at
 * its checkpoint); any
 * other event is a FAIL line, exit 1. Ends with "OK inotify_watch".
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include "app_util.h"

#define ME "inotify_watch"

static int in, wd_a, wd_b;

static void touch(const char *dir, char prefix, unsigned long i)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%c%lu", dir, prefix, i);
	unlink(path);	/* made by the run a restart replaces */
	fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
	if (fd < 0)
		die(ME, "create %s: %s", path, strerror(errno));
	close(fd);
}

/* The event must be IN_CREATE of fI in a or gI in b: 1 for a, 2 for b. */
static int check_event(const struct inotify_event *ev, unsigned long i)
{
	char want[64];
	int which = ev->wd == wd_a ? 1 : ev->wd == wd_b ? 2 : 0;

	snprintf(want, sizeof(want), "%c%lu", which == 1 ? 'f' : 'g', i);
	if (!which || !(ev->mask & IN_CREATE) || !ev->len ||
	    strcmp(ev->name, want)) {
		say("FAIL tick %lu: event wd %d mask %#x name '%s' (wds %d %d)",
		    i, ev->wd, ev->mask, ev->len ? ev->name : "", wd_a, wd_b);
		exit(1);
	}
	return which;
}

/* 1 once both events of tick i came, 0 when they did not within 3 s. */
static int wait_events(unsigned long i)
{
	char buf[4096] __attribute__((aligned(8)));
	int seen = 0;

	while (seen != 3) {
		struct pollfd p = { .fd = in, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 3000) == 0)
			return 0;
		n = read(in, buf, sizeof(buf));
		if (n <= 0) {
			say("FAIL tick %lu: read %zd: %s", i, n,
			    n < 0 ? strerror(errno) : "end of file");
			exit(1);
		}
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (void *)p;

			seen |= check_event(ev, i);
			p += sizeof(*ev) + ev->len;
		}
	}
	return 1;
}

int main(int argc, char **argv)
{
	unsigned long ticks, period;
	char a[4096], x[4096];
	int wd_x;

	if (argc != 4)
		die(ME, "usage: inotify_watch DIR TICKS PERIOD_MS");
	ticks = parse_ulong(ME, "TICKS", argv[2], 1, 100000);
	period = parse_ulong(ME, "PERIOD_MS", argv[3], 0, 10000);
	snprintf(a, sizeof(a), "%s/a", argv[1]);
	snprintf(x, sizeof(x), "%s/x", argv[1]);
	if (chdir(argv[1]) < 0 || mkdir(a, 0700) < 0 || mkdir(x, 0700) < 0 ||
	    mkdir("b", 0700) < 0)
		die(ME, "directories in %s: %s", argv[1], strerror(errno));
	in = inotify_init1(IN_CLOEXEC);
	wd_a = inotify_add_watch(in, a, IN_CREATE);
	wd_x = inotify_add_watch(in, x, IN_CREATE);
	if (in < 0 || wd_a < 0 || wd_x < 0 || inotify_rm_watch(in, wd_x) < 0)
		die(ME, "inotify: %s", strerror(errno));
	wd_b = inotify_add_watch(in, "b", IN_CREATE | IN_ONLYDIR);
	if (wd_b < 0)
		die(ME, "inotify: %s", strerror(errno));
	{
		char buf[4096];	/* x's IN_IGNORED */

		if (read(in, buf, sizeof(buf)) <= 0)
			die(ME, "no IN_IGNORED for x: %s", strerror(errno));
	}
	say("wds %d %d", wd_a, wd_b);
	for (unsigned long i = 1; i <= ticks; i++) {
		touch(a, 'f', i);
		touch("b", 'g', i);
		if (!wait_events(i))
			say("lost %lu", i);
		say("tick %lu", i);
		sleep_ms(period);
	}
	say("OK inotify_watch");
	return 0;
}
