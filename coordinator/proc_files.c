// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The /proc files a round looks at for each of its processes on this host
 * (/proc/PID/io for write progress, /proc/PID/stat for a stopped process)
 * are opened once per round and read again with pread(): every second of
 * a round with n processes would otherwise cost 3n system calls of path
 * lookup, open and close, most of the coordinator's own time in a round
 * (docs/performance.md, "Scale"). An open /proc/PID file stays bound to
 * its process: once it exits, reads fail (ESRCH) instead of showing a new
 * process that took its pid. The files are closed when the round ends.
 * Without descriptors to spare (connections near RLIMIT_NOFILE, which
 * accept() needs more), each read opens and closes its file as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
#include "coordinator.h"

static const char *const proc_file_names[PROC_FILE_COUNT] = {
	[PROC_FILE_IO] = "io",
	[PROC_FILE_STAT] = "stat",
};

void proc_files_init(struct conn *c)
{
	for (int i = 0; i < PROC_FILE_COUNT; i++)
		c->proc.file_fd[i] = -1;
}

void proc_files_close(struct conn *c)
{
	for (int i = 0; i < PROC_FILE_COUNT; i++) {
		if (c->proc.file_fd[i] >= 0)
			close(c->proc.file_fd[i]);
		c->proc.file_fd[i] = -1;
	}
}

/* Room for two more descriptors per connection, and some to spare, under
 * the soft limit. */
static bool fds_to_spare(const struct coordinator *co)
{
	static rlim_t limit;
	struct rlimit rl;

	if (!limit)
		limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
	return (co->nconns + 1) * (1 + PROC_FILE_COUNT) + 64 <= limit;
}

static int open_proc_file(const struct conn *c, enum proc_file f)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)c->proc.local_pid,
		 proc_file_names[f]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int proc_file_read(struct coordinator *co, struct conn *c, enum proc_file f,
		   char *buf, size_t len)
{
	int *fd = &c->proc.file_fd[f];
	ssize_t n;

	if (*fd < 0 && !fds_to_spare(co))
		return read_proc_text(c->proc.local_pid, proc_file_names[f],
				      buf, len);
	if (*fd < 0) {
		int r = open_proc_file(c, f);

		if (r < 0)
			return r;
		*fd = r;
	}
	do
		n = pread(*fd, buf, len - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : -ENODATA;
	buf[n] = 0;
	return 0;
}
