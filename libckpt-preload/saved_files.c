/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Regular files of the process that the image records beyond a path
 * (struct ckpt_file_record, docs/image-format.md):
 *  - every file open for writing: its size and mtime, so a restart warns
 *    when it changed since the checkpoint;
 *  - files on temporary storage (tmpfs, ramfs, /tmp, /var/tmp), open or
 *    mapped MAP_SHARED, up to a size limit: their content, since they may
 *    be gone at restart (after a reboot, or removed by a process that
 *    outlived the checkpoint: Java's /tmp/hsperfdata_<user>/<pid>);
 *  - files on temporary storage the process created exclusively
 *    (created_files.c) and that are still there, even closed: the same;
 *  - files matching ckpt_launch --save-files: their content, put back at
 *    restart so the file is rolled back to the checkpoint's state.
 * The content of a file is saved once per checkpoint, by the first
 * process to claim it (round_claim), read through the process's own fd
 * (or its path for a file only mapped) while every process of the
 * computation is stopped. ckpt_restart puts it back
 * (restart/restart_tmpfiles.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include "../protocol/client_internal.h"
#include "internal.h"

#define MAX_NOTED 1024
#define GLOBS_MAX 4096

struct noted_file {
	uint64_t dev, ino;
	uint64_t size, mtime_ns;
	uint32_t mode;
	uint32_t flags;		/* CKPT_FILE_F_* */
	int fd;			/* an fd of the process on it, or -1 */
	char path[4096];
};

/* Settings survive exec through the environment and restart through this
 * memory. */
static uint64_t tmp_file_max = CKPT_TMP_FILE_SAVE_MAX;
static char save_globs[GLOBS_MAX];	/* "GLOB:GLOB:..." */

static char env_globs[GLOBS_MAX + 32], env_tmp_max[64];

static struct noted_file *noted;	/* MAX_NOTED, mmap'd once */
static int nnoted, told_too_many;

void saved_files_read_settings(void)
{
	const char *max = getenv("CKPT_TMP_FILE_MAX");
	const char *globs = getenv("CKPT_SAVE_FILES");
	uint64_t v;

	if (max && ckpt_cc_parse_size(max, &v) == 0)
		tmp_file_max = v;
	else if (max)
		ckpt_log("CKPT_TMP_FILE_MAX=%s is not a size (N, NK, NM, NG); "
			 "keeping %llu bytes", max,
			 (unsigned long long)tmp_file_max);
	if (globs && strlen(globs) < sizeof(save_globs))
		ckpt_fmt(save_globs, sizeof(save_globs), "%s", globs);
	else if (globs)
		ckpt_log("CKPT_SAVE_FILES is longer than %d bytes: ignored",
			 GLOBS_MAX - 1);
	ckpt_fmt(env_globs, sizeof(env_globs), "CKPT_SAVE_FILES=%s",
		 save_globs);
	ckpt_fmt(env_tmp_max, sizeof(env_tmp_max), "CKPT_TMP_FILE_MAX=%llu",
		 (unsigned long long)tmp_file_max);
}

int saved_files_env(const char **out)
{
	int n = 0;

	if (save_globs[0])
		out[n++] = env_globs;
	if (tmp_file_max != CKPT_TMP_FILE_SAVE_MAX)
		out[n++] = env_tmp_max;
	return n;
}

/* The end of a [...] class at p (after '['), or NULL if unterminated;
 * *hit says whether c is in it. */
static const char *match_class(const char *p, unsigned char c, int *hit)
{
	int negate = *p == '!' || *p == '^';

	*hit = 0;
	if (negate)
		p++;
	do {
		unsigned char lo = *p, hi = lo;

		if (!*p)
			return NULL;
		if (p[1] == '-' && p[2] && p[2] != ']') {
			hi = p[2];
			p += 2;
		}
		if (c >= lo && c <= hi)
			*hit = 1;
		p++;
	} while (*p != ']');
	*hit ^= negate;
	return p + 1;
}

/* Shell pattern match, bytewise ('*' also matches '/'): fnmatch(3) may
 * allocate in a multibyte locale, which is not safe while the threads
 * are stopped. */
static int glob_match(const char *p, const char *s)
{
	const char *star_p = NULL, *star_s = NULL, *next;
	int hit;

	while (*s) {
		if (*p == '*') {
			star_p = ++p;
			star_s = s;
			continue;
		}
		if (*p == '[' && (next = match_class(p + 1, *s, &hit))) {
			if (hit) {
				p = next;
				s++;
				continue;
			}
		} else if (*p == '\\' && p[1] && p[1] == *s) {
			p += 2;
			s++;
			continue;
		} else if (*p && (*p == '?' || *p == *s)) {
			p++;
			s++;
			continue;
		}
		if (!star_p)
			return 0;
		p = star_p;
		s = ++star_s;
	}
	while (*p == '*')
		p++;
	return !*p;
}

static int matches_save_globs(const char *path)
{
	char glob[GLOBS_MAX];
	const char *p = save_globs, *end;

	while (*p) {
		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		ckpt_fmt(glob, sizeof(glob), "%.*s", (int)(end - p), p);
		if (glob[0] && glob_match(glob, path))
			return 1;
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* Files on temporary storage may be gone when the image is restarted. A
 * memfd standing for a /proc file (proc_paths.c) is on tmpfs too, but it
 * is made again from its path. */
int saved_files_on_temporary_storage(const char *path)
{
	struct statfs sf;

	if (!strncmp(path, "/tmp/", 5) || !strncmp(path, "/var/tmp/", 9))
		return 1;
	if (path[0] != '/' || !strncmp(path, "/proc/", 6) ||
	    !strncmp(path, "/sys/", 5))
		return 0;
	return statfs(path, &sf) == 0 &&
	       (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

static struct noted_file *find_noted(const struct stat *st)
{
	for (int i = 0; i < nnoted; i++)
		if (noted[i].dev == st->st_dev && noted[i].ino == st->st_ino)
			return &noted[i];
	return NULL;
}

/* Record the file with these reasons (merged with earlier ones). */
static int note_file(const char *path, const struct stat *st, int fd,
		     uint32_t flags)
{
	struct noted_file *n = find_noted(st);

	if (path[0] != '/' || !S_ISREG(st->st_mode))
		return 0;
	if (saved_files_on_temporary_storage(path))
		flags |= CKPT_FILE_F_TEMPORARY;
	if (matches_save_globs(path))
		flags |= CKPT_FILE_F_SAVE_FILES;
	if (!(flags & (CKPT_FILE_F_WRITTEN | CKPT_FILE_F_TEMPORARY |
		       CKPT_FILE_F_SAVE_FILES)))
		return 0;	/* read-only, by reference */
	if (!n) {
		if (nnoted == MAX_NOTED) {
			if (!told_too_many++)
				ckpt_log("more than %d files to record: %s and "
					 "later ones are left out (not checked "
					 "nor saved)", MAX_NOTED, path);
			return -E2BIG;
		}
		n = &noted[nnoted++];
		memset(n, 0, offsetof(struct noted_file, path));
		n->fd = -1;
		n->dev = st->st_dev;
		n->ino = st->st_ino;
		n->size = st->st_size;
		n->mtime_ns = st->st_mtim.tv_sec * 1000000000ULL +
			      st->st_mtim.tv_nsec;
		n->mode = st->st_mode & 07777;
		ckpt_fmt(n->path, sizeof(n->path), "%s", path);
	}
	n->flags |= flags;
	if (n->fd < 0)
		n->fd = fd;
	return 0;
}

int saved_files_note_fd(int fd, const char *path, const struct stat *st,
			int fl_flags)
{
	uint32_t flags = (fl_flags & O_ACCMODE) != O_RDONLY ?
			 CKPT_FILE_F_WRITTEN : 0;

	return note_file(path, st, fd, flags);
}

static int note_mapping(const char *path, const struct stat *st,
			uint32_t prot)
{
	uint32_t flags = CKPT_FILE_F_MAPPED_SHARED;

	/* written through the mapping: a restart warns if it changed (the
	 * mapping itself is by reference unless its content is saved) */
	if (prot & PROT_WRITE)
		flags |= CKPT_FILE_F_WRITTEN;
	note_file(path, st, -1, flags);	/* too many: said, left out */
	return 0;
}

/* Made exclusively on temporary storage and still there, maybe closed
 * (created_files.c): its content, as for an open one. */
static void note_created(const char *path, const struct stat *st)
{
	note_file(path, st, -1, 0);	/* too many: said, left out */
}

/* At DO_SUSPEND, before files.c notes the open files. */
static int saved_files_save(void)
{
	if (!noted) {
		noted = mmap(NULL, MAX_NOTED * sizeof(*noted),
			     PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (noted == MAP_FAILED) {
			noted = NULL;
			return -ENOMEM;
		}
	}
	nnoted = 0;
	told_too_many = 0;
	created_files_each(note_created);
	return memory_shared_file_maps(note_mapping);
}

/* A descriptor to read the content from (closed after the image is
 * written): the process's own file, even if its fd is write-only, or the
 * path of a file only mapped, checked to be the same file. */
static int open_content(const struct noted_file *n)
{
	char proc[64];
	const char *from = n->path;
	struct stat st;
	int fd, r;

	if (n->fd >= 0) {
		ckpt_fmt(proc, sizeof(proc), "/proc/self/fd/%d", n->fd);
		from = proc;
	}
	fd = open(from, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_dev != n->dev || st.st_ino != n->ino) {
		close(fd);
		return -ESTALE;
	}
	r = round_keep_memfd(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static void warn_too_large(const struct noted_file *n)
{
	ckpt_log("%s: %llu bytes on temporary storage, over the limit of %llu "
		 "bytes: its content is not saved, and a restart fails if the "
		 "file is gone by then (raise the limit with ckpt_launch "
		 "--tmp-file-max SIZE or CKPT_TMP_FILE_MAX)", n->path,
		 (unsigned long long)n->size, (unsigned long long)tmp_file_max);
}

/* Whether the content goes into this image: CKPT_FILE_F_SAVED and
 * CKPT_FILE_F_CONTENT as claimed; the content fd, -1, or -errno when a
 * --save-files file cannot be saved (the checkpoint fails, the previous
 * image stays). */
static int claim_content(const struct noted_file *n, uint32_t *flags)
{
	int save = n->flags & CKPT_FILE_F_SAVE_FILES, fd, r;

	if (!save && (n->flags & CKPT_FILE_F_TEMPORARY) &&
	    n->size > tmp_file_max) {
		*flags |= CKPT_FILE_F_TOO_LARGE;
		warn_too_large(n);
		return -1;
	}
	if (!save && !(n->flags & CKPT_FILE_F_TEMPORARY))
		return -1;
	r = round_claim(&(struct round_key){ "file", n->dev, n->ino });
	if (r == 0) {		/* another process saves it */
		*flags |= CKPT_FILE_F_SAVED;
		return -1;
	}
	fd = r < 0 ? r : open_content(n);
	if (fd >= 0) {
		*flags |= CKPT_FILE_F_SAVED | CKPT_FILE_F_CONTENT;
		return fd;
	}
	ckpt_log("%s: saving its content failed: %s%s", n->path,
		 strerror(-fd), save ? " (--save-files: the checkpoint fails, "
		 "the previous image stays)" : "; a restart fails if the file "
		 "is gone by then");
	return save ? fd : -1;
}

static int saved_files_write(struct image_writer *w)
{
	for (int i = 0; i < nnoted; i++) {
		const struct noted_file *n = &noted[i];
		struct ckpt_file_record rec;
		int fd, r;

		memset(&rec, 0, sizeof(rec));
		rec.flags = n->flags;
		fd = claim_content(n, &rec.flags);
		if (fd < -1)
			return fd;
		rec.mode = n->mode;
		rec.dev = n->dev;
		rec.ino = n->ino;
		rec.size = n->size;
		rec.mtime_ns = n->mtime_ns;
		r = writer_add_file(w, &rec, n->path, fd);
		if (r < 0)
			return r;
	}
	return 0;
}

static int saved_files_restore(const struct ckpt_restart_args *args)
{
	(void)args;
	created_files_after_restart();
	return 0;
}

const struct ckpt_resource_ops saved_files_resource_ops = {
	.name = "file contents",
	.save = saved_files_save,
	.write = saved_files_write,
	.restore = saved_files_restore,
};
