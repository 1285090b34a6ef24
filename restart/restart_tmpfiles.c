// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Files on temporary storage that the images had open come with their
 * content (libckpt-preload/files.c). Before any process is restored, each
 * one that is missing now is recreated from the image that holds its
 * content: written under a temporary name in its directory, then linked
 * into place, so a file that appeared meanwhile is never overwritten and
 * no process ever sees it half written; missing directories on its path
 * are made (mode 0700). Files that exist are left as they are.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ckpt/copy_range.h"
#include "process_tree.h"

/* The file's directory, for O_TMPFILE: "" when the path has none. */
static void parent_dir(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (slash == path)
		n = 1;
	if (n >= len)
		n = 0;
	memcpy(dir, path, n);
	dir[n] = 0;
}

/* mkdir -p, owner-only: a temporary directory (mktemp -d) may be gone
 * along with the file. */
static int make_parents(char *dir)
{
	struct stat st;

	if (stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return mkdir(dir, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

static int recreate_one(const struct ckpt_image *img,
			const struct ckpt_fd_info *f)
{
	const char *path = image_string(img, f->path);
	char dir[PATH_MAX], proc[64];
	int tmp, r;

	parent_dir(path, dir, sizeof(dir));
	if (!dir[0])
		return -EINVAL;
	r = make_parents(dir);
	if (r < 0)
		return r;
	tmp = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (tmp < 0)
		return -errno;
	r = ckpt_copy_range(img->fd, f->data_offset, f->data_size, tmp);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tmp);
	if (r == 0 && linkat(AT_FDCWD, proc, AT_FDCWD, path,
			     AT_SYMLINK_FOLLOW) < 0 && errno != EEXIST)
		r = -errno;
	close(tmp);
	return r;
}

static int has_content_to_recreate(const struct ckpt_fd_info *f)
{
	return f->kind == CKPT_FD_FILE &&
	       (f->fd_flags & CKPT_FDF_CONTENT_SAVED);
}

int restart_recreate_missing_files(struct ckpt_image *imgs, int n)
{
	struct stat st;
	int r;

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			const struct ckpt_fd_info *f = &imgs[i].fds[j];
			const char *path = image_string(&imgs[i], f->path);

			if (!has_content_to_recreate(f) ||
			    lstat(path, &st) == 0 || errno != ENOENT)
				continue;
			r = recreate_one(&imgs[i], f);
			if (r < 0) {
				fprintf(stderr, "ckpt_restart: %s: fd %d: %s is "
					"gone and recreating it from the image "
					"failed: %s\n", imgs[i].path, f->fd,
					path, strerror(-r));
				return r;
			}
			fprintf(stderr, "ckpt_restart: %s was gone; recreated "
				"from %s (%llu bytes)\n", path, imgs[i].path,
				(unsigned long long)f->data_size);
		}
	return 0;
}
