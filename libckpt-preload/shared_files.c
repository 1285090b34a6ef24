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
static int mine_in_fd_order;		/* mine[] sorted by fd (the usual) */
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
	if (nmine == 0)
		mine_in_fd_order = 1;
	else if (mine[nmine - 1].fd >= fd)
		mine_in_fd_order = 0;
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

/*
 * The table's entries chained by inode, so that deciding an entry looks
 * only at the holders of its inode: comparing each entry with the whole
 * table was most of this file's cost with thousands of sockets (2,000
 * entries, 1,000 TCP connections between two processes:
 * docs/performance.md). In mmap'd memory (no malloc while threads are
 * stopped); without it (no memory) the whole table is walked.
 */
struct ino_index {
	uint32_t *head;			/* nbuckets, then next[n] */
	uint32_t *next;
	uint32_t mask;
	size_t len;			/* bytes mapped */
};

#define END_OF_CHAIN 0xffffffffu

static uint32_t ino_bucket(const struct ino_index *x, uint64_t ino)
{
	return (uint32_t)((ino * 0x9e3779b97f4a7c15ull) >> 32) & x->mask;
}

static int ino_index_build(struct ino_index *x, const struct table_entry *t,
			   uint32_t n)
{
	uint32_t nbuckets = 64;
	void *p;

	while (nbuckets < 2 * n)
		nbuckets *= 2;
	x->len = ((size_t)nbuckets + n) * sizeof(uint32_t);
	p = mmap(NULL, x->len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		x->head = NULL;
		return -ENOMEM;
	}
	x->head = p;
	x->next = x->head + nbuckets;
	x->mask = nbuckets - 1;
	memset(x->head, 0xff, (size_t)nbuckets * sizeof(uint32_t));
	/* from the end, so that each chain is in table order */
	for (uint32_t j = n; j-- > 0;) {
		uint32_t b = ino_bucket(x, t[j].ino);

		x->next[j] = x->head[b];
		x->head[b] = j;
	}
	return 0;
}

static void ino_index_free(struct ino_index *x)
{
	if (x->head)
		munmap(x->head, x->len);
	x->head = NULL;
}

/* The first entry of the chain that may hold inode ino, then the next
 * (all of the table when there is no index). */
static uint32_t chain_first(const struct ino_index *x, uint64_t ino)
{
	return x->head ? x->head[ino_bucket(x, ino)] : 0;
}

static uint32_t chain_next(const struct ino_index *x, uint32_t j, uint32_t n)
{
	if (x->head)
		return x->next[j];
	return j + 1 < n ? j + 1 : END_OF_CHAIN;
}

/* Entry i of the table (n entries) is ours and undecided: find every
 * other holder of its description. */
static void decide(struct table_entry *t, uint32_t n, uint32_t i,
		   const struct ino_index *x)
{
	int matched = 0;

	for (uint32_t j = n ? chain_first(x, t[i].ino) : END_OF_CHAIN;
	     j != END_OF_CHAIN; j = chain_next(x, j, n)) {
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
	struct ino_index index = { NULL, NULL, 0, 0 };
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
	ino_index_build(&index, t, n);	/* without it: slower, same answer */
	for (int k = 0; k < nmine && r == 0; k++) {
		struct table_entry *e = &t[first_index + k];

		if (e->pid != mine[k].pid || e->fd != mine[k].fd) {
			r = -EPROTO;
			break;
		}
		if (!e->group)
			decide(t, n, first_index + k, &index);
		mine[k].group = e->group;
	}
	ino_index_free(&index);
	munmap(t, st.st_size);
	close(fd);
	if (r < 0)
		published = 0;
	return r;
}

/* The share value of fd's record: CKPT_FD_SHARE_GROUP | n, 0 (not
 * shared), or -1 (unknown: the table could not be used). */
static const struct table_entry *mine_of(int fd)
{
	int lo = 0, hi = nmine;

	if (!mine_in_fd_order) {
		for (int k = 0; k < nmine; k++)
			if (mine[k].fd == fd)
				return &mine[k];
		return NULL;
	}
	while (lo < hi) {	/* one per socket record: thousands */
		int mid = lo + (hi - lo) / 2;

		if (mine[mid].fd == fd)
			return &mine[mid];
		if (mine[mid].fd < fd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int64_t shared_group_of(int fd)
{
	const struct table_entry *e = published ? mine_of(fd) : NULL;

	if (!e)
		return -1;
	return e->group == NOT_SHARED ? 0 : CKPT_FD_SHARE_GROUP | e->group;
}
