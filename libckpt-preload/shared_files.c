/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Open file descriptions shared between processes of the computation,
 * whatever their fd numbers and however they came to share them (fork,
 * SCM_RIGHTS, siblings): files.c asks here which group each of its
 * regular file, directory and device fds belongs to. The processes meet
 * in one table per round, .ckpt_shared.g<generation> in the checkpoint
 * directory, under flock:
 *
 *   DO_SUSPEND (this process stopped): it appends one entry per fd
 *   (real pid, fd, dev, inode, group 0) and remembers where they are.
 *
 *   DO_WRITE (every process stopped; a process resumes once its image is
 *   written): for each of its entries still in group 0, this process is
 *   the first holder of that description to write, so every other holder
 *   is still stopped and its fd table is the one it published. kcmp
 *   (KCMP_FILE) against each entry of another process on the same inode
 *   that is still in group 0 finds them; they all get group 1 + the index
 *   of this entry, unique in the table. An entry shared with nobody gets
 *   NOT_SHARED, so that nobody compares against it after its process has
 *   resumed.
 *
 * ckpt_restart (restart/restart_files.c) opens each group once.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ckpt/safe_file.h"
#include "internal.h"

#define NOT_SHARED	0xffffffffu

struct table_entry {
	int32_t pid;			/* real pid */
	int32_t fd;
	uint64_t dev, ino;
	uint32_t group;			/* 0: not decided yet */
	uint32_t reserved;
};

static struct table_entry mine[CKPT_MAX_FDS];
static uint32_t first_index;		/* of mine[0] in the table */
static int nmine;
static int published;			/* the table has our entries */
static char table_path[4200];
static char old_table_path[4200];	/* the previous round's */

/* The round's table, locked; made (never through a symbolic link, and
 * only ever one of ours: docs/security.md, "Files in the checkpoint
 * directory") when create. */
static int lock_table(int create)
{
	const char *slash = strrchr(table_path, '/');
	char dir[4200];
	struct ckpt_refusal ref = { NULL, 0 };
	int dirfd, fd;

	ckpt_fmt(dir, sizeof(dir), "%.*s", (int)(slash - table_path),
		 table_path);
	dirfd = ckpt_safe_dir_open(dir, &ref);
	if (dirfd < 0)
		return dirfd;
	fd = create ? ckpt_open_own_at(dirfd, slash + 1, O_RDWR | O_APPEND,
				       0600, &ref) :
		      ckpt_own_leftover(dirfd, slash + 1, &ref) ?:
		      openat(dirfd, slash + 1, O_RDWR | O_NOFOLLOW |
			     O_CLOEXEC);
	if (fd == -1)
		fd = -errno;
	close(dirfd);
	if (fd < 0) {
		if (ref.why)
			ckpt_log("the table of shared files %s: %s (owner uid "
				 "%u); refusing to use it", table_path,
				 ref.why, ref.uid);
		return fd;
	}
	if (flock(fd, LOCK_EX) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* At DO_SUSPEND, before the resources are saved. */
void shared_begin_round(uint64_t generation, const char *dir)
{
	if (old_table_path[0])
		unlink(old_table_path);
	old_table_path[0] = 0;
	nmine = 0;
	published = 0;
	ckpt_fmt(table_path, sizeof(table_path), "%s/.ckpt_shared.g%llu", dir,
		 (unsigned long long)generation);
}

/* One fd that may share its description with other processes. */
int shared_add(int fd, uint64_t dev, uint64_t ino)
{
	struct table_entry *e;

	if (nmine == CKPT_MAX_FDS)
		return -EMFILE;
	e = &mine[nmine++];
	memset(e, 0, sizeof(*e));
	e->pid = nmine > 1 ? mine[0].pid : ckpt_real_getpid();
	e->fd = fd;
	e->dev = dev;
	e->ino = ino;
	return 0;
}

/* Append our entries to the round's table (DO_SUSPEND). */
int shared_publish(void)
{
	size_t len = nmine * sizeof(mine[0]);
	struct stat st;
	int fd, r = 0;

	if (!nmine)
		return 0;
	fd = lock_table(1);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || st.st_size % sizeof(mine[0]))
		r = -EPROTO;
	else if (write(fd, mine, len) != (ssize_t)len)
		r = -EIO;
	close(fd);
	if (r == 0) {
		first_index = st.st_size / sizeof(mine[0]);
		published = 1;
		ckpt_fmt(old_table_path, sizeof(old_table_path), "%s",
			 table_path);
	}
	return r;
}

static int same_description(const struct table_entry *a,
			    const struct table_entry *b)
{
	return syscall(SYS_kcmp, a->pid, b->pid, KCMP_FILE, a->fd,
		       b->fd) == 0;
}

/* Entry i of the table (n entries) is ours and undecided: find every
 * other holder of its description. */
static void decide(struct table_entry *t, uint32_t n, uint32_t i)
{
	int matched = 0;

	for (uint32_t j = 0; j < n; j++) {
		struct table_entry *o = &t[j];

		if (o->group || o->pid == t[i].pid || o->dev != t[i].dev ||
		    o->ino != t[i].ino || !same_description(&t[i], o))
			continue;
		o->group = i + 1;
		matched = 1;
	}
	t[i].group = matched ? i + 1 : NOT_SHARED;
}

/* Learn (and decide, as the first writer) the group of each of our
 * entries (DO_WRITE, before the fd records are written). */
int shared_resolve(void)
{
	struct table_entry *t;
	struct stat st;
	uint32_t n;
	int fd, r = 0;

	if (!published)
		return -ENOENT;
	fd = lock_table(0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || st.st_size % sizeof(*t) ||
	    (uint64_t)st.st_size < (first_index + nmine) * sizeof(*t)) {
		close(fd);
		return -EPROTO;
	}
	n = st.st_size / sizeof(*t);
	t = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t == MAP_FAILED) {
		close(fd);
		return -errno;
	}
	for (int k = 0; k < nmine && r == 0; k++) {
		struct table_entry *e = &t[first_index + k];

		if (e->pid != mine[k].pid || e->fd != mine[k].fd) {
			r = -EPROTO;
			break;
		}
		if (!e->group)
			decide(t, n, first_index + k);
		mine[k].group = e->group;
	}
	munmap(t, st.st_size);
	close(fd);
	if (r < 0)
		published = 0;
	return r;
}

/* The share value of fd's record: CKPT_FD_SHARE_GROUP | n, 0 (not
 * shared), or -1 (unknown: the table could not be used). */
int64_t shared_group_of(int fd)
{
	if (!published)
		return -1;
	for (int k = 0; k < nmine; k++)
		if (mine[k].fd == fd)
			return mine[k].group == NOT_SHARED ? 0 :
			       CKPT_FD_SHARE_GROUP | mine[k].group;
	return -1;
}
