// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Files whose content the images hold (libckpt-preload/saved_files.c),
 * put back before any process is restored, from the one image that holds
 * each, its checksum verified:
 *  - a file on temporary storage that is missing now is recreated,
 *    linked into place once written, so a file that appeared meanwhile is
 *    never overwritten and no process sees it half written; missing
 *    directories on its path are made (mode 0700);
 *  - a file matching --save-files is put back as it was at the checkpoint
 *    even if it exists: written beside it, then renamed over it;
 *  - a file mapped MAP_SHARED (its content is the process's memory) is
 *    put back in place, so it stays the same inode.
 * Other files on temporary storage that exist are left as they are. Then
 * every file a process had open for writing that changed since the
 * checkpoint (size or mtime) and was not put back is named in a warning.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/copy_range.h"
#include "../protocol/client_internal.h"
#include "ckpt/safe_file.h"
#include "process_tree.h"

/* The file's directory, for O_TMPFILE: "" when the path has none. */
void parent_dir(const char *path, char *dir, size_t len)
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

struct file_key {
	uint64_t dev, ino;
};

/* The files put back in this restart, by their identity at checkpoint. */
struct put_back_set {
	struct file_key *keys;
	size_t n, cap;
};

static int set_add(struct put_back_set *set, const struct ckpt_file_record *f)
{
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 64;
		struct file_key *k = realloc(set->keys, cap * sizeof(*k));

		if (!k)
			return -ENOMEM;
		set->keys = k;
		set->cap = cap;
	}
	set->keys[set->n++] = (struct file_key){ f->dev, f->ino };
	return 0;
}

static int set_has(const struct put_back_set *set,
		   const struct ckpt_file_record *f)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->keys[i].dev == f->dev && set->keys[i].ino == f->ino)
			return 1;
	return 0;
}

static uint64_t mtime_ns(const struct stat *st)
{
	return (uint64_t)st->st_mtim.tv_sec * 1000000000ULL +
	       st->st_mtim.tv_nsec;
}

static int changed_since(const struct ckpt_file_record *f,
			 const struct stat *st)
{
	return (uint64_t)st->st_size != f->size || mtime_ns(st) != f->mtime_ns;
}

static int copy_mtime(const struct ckpt_file_record *f, int fd)
{
	struct timespec times[2] = {
		{ .tv_nsec = UTIME_OMIT },
		{ .tv_sec = f->mtime_ns / 1000000000ULL,
		  .tv_nsec = f->mtime_ns % 1000000000ULL },
	};

	return futimens(fd, times) < 0 ? -errno : 0;
}

/* The saved content into fd (at its position), with the checkpoint's
 * mtime. */
static int copy_content(struct ckpt_image *img,
			const struct ckpt_file_record *f, int fd)
{
	int r = ckpt_copy_range(img->fd, f->data_offset, f->size, fd);

	return r < 0 ? r : copy_mtime(f, fd);
}

static int verify_content(struct ckpt_image *img,
			  const struct ckpt_file_record *f)
{
	char *buf = malloc(CKPT_FILE_HASH_CHUNK);
	uint64_t hash;
	int r;

	if (!buf)
		return -ENOMEM;
	r = image_content_hash(img, f->data_offset, f->size, buf, &hash);
	free(buf);
	if (r < 0)
		return r;
	if (hash != f->data_hash) {
		snprintf(img->err, sizeof(img->err), "checksum mismatch: the "
			 "saved content is corrupt");
		return -EBADMSG;
	}
	return 0;
}

/* An unlinked file in dir with the saved content, mode and mtime. */
static int write_content(struct ckpt_image *img,
			 const struct ckpt_file_record *f, const char *dir,
			 mode_t mode)
{
	int tmp = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), r;

	if (tmp < 0)
		return -errno;
	r = copy_content(img, f, tmp);
	if (r == 0 && fchmod(tmp, mode) < 0)
		r = -errno;
	if (r < 0) {
		close(tmp);
		return r;
	}
	return tmp;
}

/* The same inode rewritten: processes outside the computation that map
 * it keep sharing it (no truncation to zero on the way, which would fault
 * their mappings). Also where nothing can be made beside the file. */
static int put_back_in_place(struct ckpt_image *img,
			     const struct ckpt_file_record *f, const char *path)
{
	int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC), r;
	struct stat st;

	/* Never through a symbolic link planted in its place. */
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	r = copy_content(img, f, fd);
	if (r == 0 && ftruncate(fd, f->size) < 0)
		r = -errno;
	if (r == 0)
		r = copy_mtime(f, fd);
	close(fd);
	return r;
}

static int cannot_write_beside(int r)
{
	return r == -EACCES || r == -EPERM || r == -EOPNOTSUPP ||
	       r == -EISDIR;
}

static int link_tmpfile(int tmp, const char *path)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tmp);
	return linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) < 0 ?
	       -errno : 0;
}

/* Replace path by tmp's file: linked beside it, renamed over it. */
static int replace_with(int tmp, const char *path, const char *dir)
{
	char beside[PATH_MAX];
	int r;

	if ((size_t)snprintf(beside, sizeof(beside), "%s/.ckpt_put_back.%d",
			     dir, (int)getpid()) >= sizeof(beside))
		return -ENAMETOOLONG;
	unlink(beside);
	r = link_tmpfile(tmp, beside);
	if (r == 0 && rename(beside, path) < 0) {
		r = -errno;
		unlink(beside);
	}
	return r;
}

/* A file that is gone: linked into place once written (1), unless one
 * was made meanwhile (0, left as it is). */
static int recreate_missing(struct ckpt_image *img,
			    const struct ckpt_file_record *f, const char *path,
			    char *dir)
{
	int tmp, r;

	tmp = write_content(img, f, dir, f->mode);
	if (tmp < 0)
		return tmp;
	r = link_tmpfile(tmp, path);
	close(tmp);
	if (r == -EEXIST)
		return 0;
	if (r < 0)
		return r;
	fprintf(stderr, "ckpt_restart: %s was gone; recreated from %s (%llu "
		"bytes)\n", path, img->path, (unsigned long long)f->size);
	return 1;
}

/* A --save-files file that is still the checkpoint's inode is rewritten
 * in place: programs remember the inode of what they opened (sqlite
 * takes a database whose inode changed for moved: "attempt to write a
 * readonly database"), and the image keeps the content should the
 * restart be cut short. One that another file replaced meanwhile is
 * replaced in turn (written beside, renamed over); a shared-mapped one
 * is rewritten in place. */
static int put_back_existing(struct ckpt_image *img,
			     const struct ckpt_file_record *f,
			     const char *path, const char *dir,
			     const struct stat *st)
{
	int tmp, r = -EOPNOTSUPP;

	if ((f->flags & CKPT_FILE_F_SAVE_FILES) &&
	    ((uint64_t)st->st_dev != f->dev || (uint64_t)st->st_ino != f->ino)) {
		tmp = r = write_content(img, f, dir, st->st_mode & 07777);
		if (tmp >= 0) {
			r = replace_with(tmp, path, dir);
			close(tmp);
		}
	}
	if (cannot_write_beside(r))
		r = put_back_in_place(img, f, path);
	if (r < 0)
		return r;
	if (changed_since(f, st))
		fprintf(stderr, "ckpt_restart: %s changed since the checkpoint;"
			" put back as it was then, from %s (%llu bytes)\n",
			path, img->path, (unsigned long long)f->size);
	return 1;
}

/* Nobody else can redirect what is written under dir: a directory on
 * its path that another user may rename things in, or their symbolic
 * link, could send the content elsewhere (docs/security.md, "Files in the
 * checkpoint directory"). */
static int check_parents(struct ckpt_image *img, const char *dir)
{
	struct ckpt_refusal ref;
	char bad[PATH_MAX];
	int r = ckpt_path_check(dir, bad, sizeof(bad), &ref);

	if (r < 0 && ref.why)
		snprintf(img->err, sizeof(img->err), "%.600s: %s (owner uid "
			 "%u); not writing under it", bad, ref.why, ref.uid);
	return r;
}

/* 1 if put back, 0 if left as it is, -errno. */
static int put_back_one(struct ckpt_image *img,
			const struct ckpt_file_record *f)
{
	const char *path = image_string(img, f->path);
	int always = f->flags & (CKPT_FILE_F_SAVE_FILES |
				 CKPT_FILE_F_MAPPED_SHARED);
	char dir[PATH_MAX];
	struct stat st;
	int missing = lstat(path, &st) < 0, r;

	if (missing && errno != ENOENT)
		return -errno;
	if (!missing && !always)
		return 0;	/* a temporary file that is still there */
	parent_dir(path, dir, sizeof(dir));
	if (!dir[0])
		return -EINVAL;
	r = verify_content(img, f);
	if (r == 0 && missing)
		r = ckpt_cc_make_dirs(dir);	/* a mktemp -d directory may be
					   gone along with the file */
	if (r == 0)
		r = check_parents(img, dir);
	if (r < 0)
		return r;
	return missing ? recreate_missing(img, f, path, dir) :
			 put_back_existing(img, f, path, dir, &st);
}

static int put_back_all(struct ckpt_image *imgs, int n,
			struct put_back_set *done)
{
	int r;

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfiles; j++) {
			const struct ckpt_file_record *f = &imgs[i].files[j];

			if (!(f->flags & CKPT_FILE_F_CONTENT))
				continue;
			imgs[i].err[0] = 0;
			r = put_back_one(&imgs[i], f);
			if (r > 0)
				r = set_add(done, f);
			if (r < 0) {
				fprintf(stderr, "ckpt_restart: %s: putting back "
					"%s from the image failed: %s\n",
					imgs[i].path, image_string(&imgs[i],
								   f->path),
					imgs[i].err[0] ? imgs[i].err :
					strerror(-r));
				return r;
			}
		}
	return 0;
}

/* A file on temporary storage too large to be saved is gone: no process
 * that had it can be restored. */
static int check_unsaved(const struct ckpt_image *img,
			 const struct ckpt_file_record *f)
{
	const char *path = image_string(img, f->path);
	struct stat st;

	if (!(f->flags & CKPT_FILE_F_TOO_LARGE) || stat(path, &st) == 0)
		return 0;
	fprintf(stderr, "ckpt_restart: %s: %s is gone and its content was not "
		"saved: %llu bytes on temporary storage, over the limit when "
		"the checkpoint was taken (ckpt_launch --tmp-file-max SIZE, "
		"CKPT_TMP_FILE_MAX)\n", img->path, path,
		(unsigned long long)f->size);
	return -ENOENT;
}

static void warn_if_changed(const struct ckpt_image *img,
			    const struct ckpt_file_record *f)
{
	const char *path = image_string(img, f->path);
	struct stat st;

	const char *how = f->flags & CKPT_FILE_F_MAPPED_SHARED ?
			  "mapped for writing" : "open for writing";

	if (stat(path, &st) < 0) {
		fprintf(stderr, "ckpt_restart: warning: %s, %s by %s (pid %d), "
			"is gone since the checkpoint: %s\n", path, how,
			img->hdr.program, img->hdr.vpid, strerror(errno));
		return;
	}
	if (!changed_since(f, &st))
		return;
	fprintf(stderr, "ckpt_restart: warning: %s, %s by %s (pid %d), "
		"changed since the checkpoint (%llu bytes then, %llu now%s); "
		"the process resumes against the changed file (ckpt_launch "
		"--save-files GLOB saves such a file and puts it back)\n",
		path, how, img->hdr.program, img->hdr.vpid,
		(unsigned long long)f->size, (unsigned long long)st.st_size,
		mtime_ns(&st) != f->mtime_ns ? ", modified since" : "");
}

int restart_put_back_files(struct ckpt_image *imgs, int n)
{
	struct put_back_set done = { 0 };
	int r = put_back_all(imgs, n, &done);

	for (int i = 0; i < n && r == 0; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfiles && r == 0; j++) {
			const struct ckpt_file_record *f = &imgs[i].files[j];

			r = check_unsaved(&imgs[i], f);
			if (r == 0 && (f->flags & CKPT_FILE_F_WRITTEN) &&
			    !set_has(&done, f)) {
				warn_if_changed(&imgs[i], f);
				/* once per file, not per fd or process */
				r = set_add(&done, f);
			}
		}
	free(done.keys);
	return r;
}
