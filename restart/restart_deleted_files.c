// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Files deleted while open that processes of several images hold (GNU
 * parallel: a job writes its output into a file in $TMPDIR that parallel
 * made, unlinked and reads back once the job ends). libckpt tags each
 * such record with its inode (ckpt_fd_info.share of a
 * CKPT_FD_FILE_DELETED record); restored one per process, the writer and
 * the reader would each get a file of their own and the reader would never
 * see what the writer wrote after the restart. ckpt_restart makes the
 * file once with the saved content (O_TMPFILE in its directory, else a
 * memfd), opens one description per record at the saved offset and
 * flags, and hands them over through the plan; libckpt dup2s each to its
 * number (files.c). A deleted file only one image holds is left to
 * libckpt, as before, unless processes of several images map it too
 * (a memfd shared across fork, held as an fd and mapped): then it is made
 * here, and restart_shm.c maps this same file for them
 * (restart_deleted_file_fd), so that fd and mappings stay one object.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include "ckpt/copy_range.h"
#include "ckpt/memfd_name.h"
#include "process_tree.h"

struct deleted_file {
	uint32_t tag;			/* share: CKPT_FD_SHARE_GROUP | inode */
	const char *path;
	int img, rec;			/* the record with the most content */
	int nimages;			/* images holding it */
	int last_img;
	int fd;				/* the made file, -1 until made */
};

#define MAX_DELETED_FILES 1024

static struct deleted_file files[MAX_DELETED_FILES];
static int nfiles;

static int is_tagged(const struct ckpt_fd_info *f)
{
	return f->kind == CKPT_FD_FILE_DELETED &&
	       (f->share & CKPT_FD_SHARE_GROUP);
}

static struct deleted_file *find_file(uint32_t tag, const char *path)
{
	for (int i = 0; i < nfiles; i++)
		if (files[i].tag == tag && !strcmp(files[i].path, path))
			return &files[i];
	return NULL;
}

/* Does image i map the file of tag `tag` at path (a MAP_SHARED mapping
 * saved as a shared object: region kind ANON_SHARED, same inode, same
 * name)? */
static int image_maps(const struct ckpt_image *img, uint32_t tag,
		      const char *path)
{
	for (uint32_t j = 0; j < img->hdr.nregions; j++) {
		const struct ckpt_region *r = &img->regions[j];

		if (r->kind == CKPT_REGION_ANON_SHARED && r->file_ino &&
		    (uint32_t)(r->file_ino & ~CKPT_FD_SHARE_GROUP) ==
		    (tag & ~CKPT_FD_SHARE_GROUP) &&
		    !strcmp(image_string(img, r->name), path))
			return 1;
	}
	return 0;
}

/* Images that map the file but hold no fd of it count as holders: the
 * file is then made here for the fds and the mappings alike. */
static void count_mapping_images(struct ckpt_image *imgs, int n)
{
	for (int k = 0; k < nfiles; k++) {
		struct deleted_file *d = &files[k];

		d->nimages = 0;
		for (int i = 0; i < n; i++) {
			int holds = 0;

			for (uint32_t j = 0; j < imgs[i].hdr.nfds && !holds; j++)
				holds = is_tagged(&imgs[i].fds[j]) &&
					imgs[i].fds[j].share == d->tag &&
					!strcmp(image_string(&imgs[i],
						imgs[i].fds[j].path), d->path);
			if (holds || image_maps(&imgs[i], d->tag, d->path))
				d->nimages++;
		}
	}
}

/* Note record (i, j); -E2BIG when there are too many files. */
static int note_record(struct ckpt_image *imgs, int i, int j)
{
	const struct ckpt_fd_info *f = &imgs[i].fds[j];
	const char *path = image_string(&imgs[i], f->path);
	struct deleted_file *d = find_file(f->share, path);

	if (!d) {
		if (nfiles == MAX_DELETED_FILES)
			return -E2BIG;
		d = &files[nfiles++];
		*d = (struct deleted_file){ f->share, path, i, j, 1, i, -1 };
		return 0;
	}
	if (d->last_img != i) {
		d->nimages++;
		d->last_img = i;
	}
	if (f->data_size > imgs[d->img].fds[d->rec].data_size) {
		d->img = i;
		d->rec = j;
	}
	return 0;
}

/* fd moved to `above` or higher (the descriptions handed over take the
 * numbers below, from the top of the kept range up); fd if it cannot. */
static int move_above(int fd, int above)
{
	int moved = fcntl(fd, F_DUPFD_CLOEXEC, above);

	if (moved < 0)
		return fd;
	close(fd);
	return moved;
}

/* A new unlinked file holding the saved content, in the file's
 * directory when it still exists, at `above` or higher. */
static int make_file(struct ckpt_image *imgs, const struct deleted_file *d,
		     int above)
{
	const struct ckpt_fd_info *f = &imgs[d->img].fds[d->rec];
	char dir[4096], name[250], *slash;
	int fd, r;

	snprintf(dir, sizeof(dir), "%s", d->path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	/* a memfd under its name, sealable: libckpt adds the seals */
	if (ckpt_memfd_name(d->path, name, sizeof(name)))
		fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	else
		fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		fd = memfd_create("ckpt-deleted-file",
				  MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	fd = move_above(fd, above);
	r = ckpt_copy_range(imgs[d->img].fd, f->data_offset, f->data_size,
			    fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* One description of the made file with the record's flags and offset,
 * placed at *next_fd. */
static int open_description(int file, const struct ckpt_fd_info *f,
			    int *next_fd)
{
	char proc[64];
	int fd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", file);
	fd = open(proc, CKPT_FD_REOPEN_FLAGS(f->flags) & ~O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (f->offset >= 0 && lseek(fd, f->offset, SEEK_SET) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	fd = place_handed(fd, next_fd);
	return fd < 0 ? -EMFILE : fd;
}

static int hand_record(struct ckpt_image *imgs, int i, int j,
		       struct ckpt_restart_plan *plan, int *next_fd, int above)
{
	const struct ckpt_fd_info *f = &imgs[i].fds[j];
	struct deleted_file *d = find_file(f->share,
					   image_string(&imgs[i], f->path));
	int fd;

	if (d->nimages < 2)
		return 0;		/* libckpt makes it, as before */
	if (d->fd < 0)
		d->fd = make_file(imgs, d, above);
	fd = d->fd < 0 ? d->fd : open_description(d->fd, f, next_fd);
	if (fd >= 0)
		fd = plan_add_file(plan, imgs[i].hdr.vpid, f->fd, fd);
	if (fd < 0)
		fprintf(stderr, "ckpt_restart: %s: fd %d (%s): making the "
			"deleted file other processes hold too failed: %s\n",
			imgs[i].path, f->fd, d->path, strerror(-fd));
	return fd < 0 ? fd : 0;
}

/* The number of records handed over: those of files several images
 * hold. */
static int count_handed(struct ckpt_image *imgs, int n)
{
	int count = 0;

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			const struct ckpt_fd_info *f = &imgs[i].fds[j];

			if (is_tagged(f) &&
			    find_file(f->share, image_string(&imgs[i],
							     f->path))->nimages > 1)
				count++;
		}
	return count;
}

/* The made files stay open for restart_shm.c, whose objects take the
 * numbers right after the handed descriptions: moved to the top of the
 * fd table out of their way (where they are, if that fails: the
 * object's placing then says so). */
static void park_made_files(void)
{
	struct rlimit rl;
	int slot = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < 256 ||
	    rl.rlim_cur > INT_MAX)
		return;
	for (int i = 0; i < nfiles; i++) {
		int moved;

		if (files[i].fd < 0)
			continue;
		moved = fcntl(files[i].fd, F_DUPFD_CLOEXEC,
			      (int)rl.rlim_cur - 1 - nfiles + slot++);
		if (moved < 0)
			continue;
		close(files[i].fd);
		files[i].fd = moved;
	}
}

void restart_deleted_files_release(void)
{
	for (int i = 0; i < nfiles; i++)
		if (files[i].fd >= 0)
			close(files[i].fd);
	nfiles = 0;
}

int restart_deleted_file_fd(uint64_t ino, const char *path)
{
	uint32_t low = (uint32_t)(ino & ~CKPT_FD_SHARE_GROUP);

	for (int i = 0; i < nfiles; i++)
		if ((files[i].tag & ~CKPT_FD_SHARE_GROUP) == low &&
		    !strcmp(files[i].path, path))
			return files[i].fd;
	return -1;
}

int restart_deleted_files_create(struct ckpt_image *imgs, int n,
				 struct ckpt_restart_plan *plan,
				 int *keep_fd_end)
{
	int r = 0, above;

	for (int i = 0; i < n && !r; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds && !r; j++)
			if (is_tagged(&imgs[i].fds[j]))
				r = note_record(imgs, i, (int)j);
	if (r < 0)
		fprintf(stderr, "ckpt_restart: more than %d deleted files "
			"open in the computation\n", MAX_DELETED_FILES);
	else
		count_mapping_images(imgs, n);
	above = *keep_fd_end + (r ? 0 : count_handed(imgs, n));
	for (int i = 0; i < n && !r; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds && !r; j++)
			if (is_tagged(&imgs[i].fds[j]))
				r = hand_record(imgs, i, (int)j, plan,
						keep_fd_end, above);
	if (r < 0)
		restart_deleted_files_release();
	else
		park_made_files();
	return r;
}
