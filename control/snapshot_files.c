// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_command's side of snapshots: --restore runs ckpt_restart on the
 * snapshot's images (the restored processes are ckpt_command's, on its
 * terminal, as a restart always is), and --checkpoint --from-snapshot
 * copies its images out of memory into a checkpoint directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snapshot_files.h"

#define MAX_IMAGES 4096

/* The paths of text (one per line), NUL-terminated in place. */
static int split_lines(char *text, char **out, int max)
{
	int n = 0;

	for (char *line = strtok(text, "\n"); line && n < max;
	     line = strtok(NULL, "\n"))
		if (line[0])
			out[n++] = line;
	return n;
}

/* Run ckpt_restart (beside this program; --stopped if asked) on the
 * images: returns only on failure, with a message. */
int snapshot_exec_restart(char *images, int stopped)
{
	char self[PATH_MAX], tool[PATH_MAX + 32], flag[] = "--stopped";
	char *argv[MAX_IMAGES + 3];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int nimg;

	if (n <= 0) {
		fprintf(stderr, "ckpt_command: cannot find ckpt_restart: "
			"/proc/self/exe: %s\n", strerror(errno));
		return -errno;
	}
	self[n] = 0;
	snprintf(tool, sizeof(tool), "%s/ckpt_restart", dirname(self));
	argv[0] = tool;
	if (stopped)
		argv[1] = flag;
	nimg = split_lines(images, argv + 1 + stopped, MAX_IMAGES);
	argv[nimg + 1 + stopped] = NULL;
	if (!nimg) {
		fprintf(stderr, "ckpt_command: the snapshot has no image\n");
		return -ENOENT;
	}
	execv(tool, argv);
	fprintf(stderr, "ckpt_command: cannot run %s: %s\n", tool,
		strerror(errno));
	return -errno;
}

/* read/write, for file systems copy_file_range cannot span (tmpfs to
 * another: EXDEV). */
static int copy_by_reading(int in, int out)
{
	static char buf[1 << 20];

	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf)), done = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		while (done < n) {
			ssize_t w = write(out, buf + done, n - done);

			if (w < 0 && errno != EINTR)
				return -errno;
			if (w > 0)
				done += w;
		}
	}
}

static int copy_fd(int in, int out)
{
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);

		if (n == 0)
			return 0;
		if (n < 0 && (errno == EXDEV || errno == EINVAL ||
			      errno == ENOSYS || errno == EOPNOTSUPP))
			return copy_by_reading(in, out);
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* src into dir under its own name: written to a temporary file, synced,
 * renamed over (a failure leaves any previous image). */
static int copy_image(const char *src, const char *dir, char *dst,
		      size_t dstlen)
{
	char tmp[PATH_MAX + 4200], name[PATH_MAX];
	int in, out, r;

	snprintf(name, sizeof(name), "%s", src);
	snprintf(dst, dstlen, "%s/%s", dir, basename(name));
	snprintf(tmp, sizeof(tmp), "%s.from-snapshot.%d", dst, (int)getpid());
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	r = copy_fd(in, out);
	if (r == 0 && fsync(out) < 0)
		r = -errno;
	close(in);
	if (close(out) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* Copy every image of the list into dir and print the new paths. */
int snapshot_copy_images(char *images, const char *dir)
{
	char *paths[MAX_IMAGES], dst[PATH_MAX + 64];
	int n = split_lines(images, paths, MAX_IMAGES);

	for (int i = 0; i < n; i++) {
		int r = copy_image(paths[i], dir, dst, sizeof(dst));

		if (r < 0) {
			fprintf(stderr, "ckpt_command: copying %s into %s: "
				"%s\n", paths[i], dir, strerror(-r));
			return r;
		}
		printf("%s\n", dst);
	}
	return 0;
}
