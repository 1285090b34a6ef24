/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a restart of this checkpoint will not bring back, said when the
 * checkpoint is taken rather than only at restart: the resources note it
 * while they save (files.c for each descriptor its restore turns into
 * /dev/null, process.c for POSIX timers), the manager sends the lines to
 * the coordinator, which passes them on to ckpt_command's stderr, and
 * the image keeps them for ckpt_inspect. One line per thing: what it is
 * and why it is not restored. No malloc: threads are stopped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"

#define UNRESTORED_MAX	(16 << 10)

static char text[UNRESTORED_MAX];
static size_t used;
static unsigned dropped;

void unrestored_begin(void)
{
	used = 0;
	dropped = 0;
	text[0] = 0;
}

void unrestored_add(const char *fmt, ...)
{
	char line[1024];
	size_t n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	n = strlen(line);
	line[n++] = '\n';
	/* room for the last "... more" line */
	if (used + n + 64 >= sizeof(text)) {
		dropped++;
		return;
	}
	memcpy(text + used, line, n);
	used += n;
	text[used] = 0;
}

/* The lines, "" when everything will be restored. */
const char *unrestored_text(void)
{
	if (dropped) {
		snprintf(text + used, sizeof(text) - used,
			 "... and %u more not listed\n", dropped);
		dropped = 0;
		used = strlen(text);
	}
	return text;
}

/* What an anonymous-inode descriptor is, from its /proc/self/fd link. */
static const char *anon_inode_name(const char *path)
{
	static const struct {
		const char *link, *name;
	} names[] = {
		{ "anon_inode:[eventpoll]", "an epoll instance" },
		{ "anon_inode:[eventfd]", "an eventfd" },
		{ "anon_inode:[timerfd]", "a timerfd" },
		{ "anon_inode:[signalfd]", "a signalfd" },
		{ "anon_inode:inotify", "an inotify instance" },
		{ "anon_inode:[fanotify]", "a fanotify instance" },
		{ "anon_inode:[pidfd]", "a pidfd" },
		{ "anon_inode:[io_uring]", "an io_uring instance" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(path, names[i].link))
			return names[i].name;
	return "a kernel object";
}

static void describe_fd(int fd, const char *path, char *what, size_t len)
{
	if (!strncmp(path, "socket:", 7) && sockets_describe(fd, what, len) == 0)
		return;
	if (fd_is_mqueue(fd))
		ckpt_fmt(what, len, "a POSIX message queue (mq_open \"%s\"): "
			 "neither it nor its messages are saved", path);
	else if (!strncmp(path, "anon_inode:", 11))
		ckpt_fmt(what, len, "%s (%s)", anon_inode_name(path), path);
	else if (!strncmp(path, "pipe:", 5))
		ckpt_fmt(what, len, "a pipe leading outside the computation "
			 "(%s)", path);
	else
		ckpt_fmt(what, len, "%s", path);
}

/* A descriptor whose saved kind its restore replaces by /dev/null
 * (files.c decides: CKPT_FD_UNSUPPORTED). */
void unrestored_fd(int fd, const char *path)
{
	char what[512];

	describe_fd(fd, path, what, sizeof(what));
	unrestored_add("fd %d: %s: not restored yet, a restart puts "
		       "/dev/null in its place", fd, what);
}
