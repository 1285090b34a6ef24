/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Background compaction of a chain of incremental images (docs/
 * image-format.md, "Compaction"). Once the chain's head is durable, the
 * checkpoint has answered and the program runs, a chain of at least
 * CKPT_CHAIN_COMPACT images (default 8) is merged into one full image by
 * a helper process: the head's bytes are copied as they are, the data of
 * every extent it takes from a link is appended after them, and the
 * head's metadata is rewritten in place (each such extent now in the
 * file itself, no links, chain length 1). Extent and page hashes do not
 * change (they hash data, not where it lies), so the next delta chains
 * off the compacted image as off the head. The new file is written
 * under a temporary name, synced, renamed over the head and the
 * directory synced: a crash or a kill leaves the head (and its links)
 * or the compacted image, both whole. The links are removed only once
 * the compacted image is durable.
 *
 * The helper is a clone sharing the program's memory (no copy of its
 * page tables, no copy-on-write faults for the program), with a stack of
 * its own and no exit signal (the program never sees it: waitpid without
 * __WCLONE does not report it). It makes only system calls, on buffers
 * prepared before it starts, and maps nothing. A checkpoint that begins
 * while it runs stops it first (compaction_stop): the next delta must
 * link the file its base will stay.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ckpt/hash.h"
#include "ckpt/image.h"
#include "image_chain.h"
#include "internal.h"

#define PAGE 4096UL
#define COMPACT_AFTER_DEFAULT	8
#define HELPER_STACK		(64UL << 10)
#define COPY_CHUNK		(1UL << 20)	/* pread/pwrite fallback */

struct compaction {
	pid_t pid;			/* 0: none running */
	uint64_t generation;
	char dir[4096], path[4096];	/* the head, compacted in place */
	char tmp_prefix[4096];		/* <dir>/.ckpt_<prog>_<id>.img.tmp. */
	struct ckpt_image_header h;
	unsigned char *meta;		/* the head's metadata block */
	unsigned char *buf;		/* COPY_CHUNK, for the fallback copy */
	void *stack;
	int result;			/* the helper's, -errno */
};

static struct compaction job;

static int compact_after(void)
{
	const char *s = getenv("CKPT_CHAIN_COMPACT");
	long n = s ? strtol(s, NULL, 10) : 0;

	return n >= 2 && n <= CKPT_LINKS_MAX + 1 ? (int)n :
	       COMPACT_AFTER_DEFAULT;
}

/* --- in the helper: system calls only ----------------------------- */

static long sys_ret(long r)
{
	return r < 0 ? -errno : r;
}

/* All len bytes by pread64 or pwrite64 (nr); a short count: -EIO. */
static int io_full(long nr, int fd, const void *buf, size_t len,
		   uint64_t off)
{
	for (size_t done = 0; done < len;) {
		long n = sys_ret(syscall(nr, fd, (const char *)buf + done,
					 len - done, off + done));

		if (n == -EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? (int)n : -EIO;
		done += n;
	}
	return 0;
}

static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	return io_full(SYS_pread64, fd, buf, len, off);
}

static int write_full(int fd, const void *buf, size_t len, uint64_t off)
{
	return io_full(SYS_pwrite64, fd, buf, len, off);
}

/* len bytes from in at from to out at to: in the kernel where it can. */
static int copy_range(int in, uint64_t from, int out, uint64_t to,
		      uint64_t len)
{
	while (len) {
		loff_t a = (loff_t)from, b = (loff_t)to;
		long n = sys_ret(syscall(SYS_copy_file_range, in, &a, out, &b,
					 len, 0));
		int r;

		if (n == -EINTR)
			continue;
		if (n <= 0) {	/* not here (another filesystem...): copy */
			n = len < COPY_CHUNK ? (long)len : (long)COPY_CHUNK;
			r = read_full(in, job.buf, n, from);
			if (r == 0)
				r = write_full(out, job.buf, n, to);
			if (r < 0)
				return r;
		}
		from += n;
		to += n;
		len -= n;
	}
	return 0;
}

/* "<dir>/<name>" into path, or -ENAMETOOLONG. */
static int join(char *path, size_t len, const char *dir, const char *name)
{
	size_t d = strlen(dir), n = strlen(name);

	if (d + n + 2 > len)
		return -ENAMETOOLONG;
	memcpy(path, dir, d);
	path[d] = '/';
	memcpy(path + d + 1, name, n + 1);
	return 0;
}

static int open_in(const char *dir, const char *name, int flags, int mode)
{
	char path[8192];
	int r = join(path, sizeof(path), dir, name);

	return r < 0 ? r : (int)sys_ret(syscall(SYS_openat, AT_FDCWD, path,
						flags | O_CLOEXEC |
						O_NOFOLLOW, mode));
}

static const struct ckpt_image_link *head_links(const char **strings)
{
	const struct ckpt_image_header *h = &job.h;

	*strings = (const char *)job.meta + (h->strings_offset -
					     h->meta_offset);
	return (const void *)(job.meta + (h->links_offset - h->meta_offset));
}

/* Once the compacted head is durable: the files it took data from. */
static void remove_links(void)
{
	const char *strings;
	const struct ckpt_image_link *l = head_links(&strings);
	char path[8192];

	for (uint32_t i = 0; i < job.h.nlinks; i++)
		if (join(path, sizeof(path), job.dir,
			 strings + l[i].name) == 0)
			syscall(SYS_unlinkat, AT_FDCWD, path, 0);
}

/* The link files of the head, each checked against the header hash the
 * head recorded for it. */
static int open_links(int *fds)
{
	const struct ckpt_image_header *h = &job.h;
	const char *strings;
	const struct ckpt_image_link *l = head_links(&strings);
	struct ckpt_image_header lh;

	for (uint32_t i = 0; i < h->nlinks; i++) {
		int r;

		fds[i] = open_in(job.dir, strings + l[i].name, O_RDONLY, 0);
		if (fds[i] < 0)
			return fds[i];
		r = read_full(fds[i], &lh, sizeof(lh), 0);
		if (r < 0)
			return r;
		if (lh.header_hash != l[i].header_hash ||
		    lh.image_size != l[i].image_size)
			return -ESTALE;
	}
	return 0;
}

/* Every extent taken from a link appended to out from off on (raw data
 * page-aligned, as the writer puts it); *end after the last. */
static int append_link_data(const int *fds, int out, uint64_t off,
			    uint64_t *end)
{
	const struct ckpt_image_header *h = &job.h;
	struct ckpt_extent *e = (void *)(job.meta +
					 (h->extents_offset - h->meta_offset));
	int r = 0;

	for (uint64_t i = 0; i < h->nextents && r == 0; i++) {
		if (!e[i].source)
			continue;
		if (e[i].source > h->nlinks)
			return -EINVAL;
		if (e[i].encoding == CKPT_EXTENT_RAW)
			off = (off + PAGE - 1) & ~(PAGE - 1);
		r = copy_range(fds[e[i].source - 1], e[i].file_offset, out,
			       off, e[i].stored_len);
		e[i].file_offset = off;
		e[i].source = 0;
		off += e[i].stored_len;
	}
	*end = off;
	return r;
}

/* The head's new header: no links, a chain of one, its new size. */
static int write_compacted_header(int out, uint64_t image_size)
{
	unsigned char page[CKPT_HEADER_SIZE];
	struct ckpt_image_header *h = (void *)page;

	memset(page, 0, sizeof(page));
	memcpy(h, &job.h, sizeof(*h));
	h->nlinks = 0;
	h->links_offset = 0;
	h->chain_length = 1;
	h->image_size = image_size;
	h->meta_hash = ckpt_hash64(job.meta, h->meta_size, 0);
	h->header_hash = 0;
	h->header_hash = ckpt_hash64(h, h->header_size, 0);
	return write_full(out, page, sizeof(page), 0);
}

static void close_all(const int *fds, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			syscall(SYS_close, fds[i]);
}

/* The compacted image under tmp (our pid's name), synced. */
static int write_compacted(int head, const char *tmp, const int *links)
{
	const struct ckpt_image_header *h = &job.h;
	uint64_t end = 0;
	int out, r;

	out = (int)sys_ret(syscall(SYS_openat, AT_FDCWD, tmp, O_WRONLY |
				   O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
				   0600));
	if (out < 0)
		return out;
	r = copy_range(head, CKPT_HEADER_SIZE, out, CKPT_HEADER_SIZE,
		       h->image_size - CKPT_HEADER_SIZE);
	if (r == 0)
		r = append_link_data(links, out, h->image_size, &end);
	if (r == 0)
		r = write_full(out, job.meta, h->meta_size, h->meta_offset);
	if (r == 0)
		r = write_compacted_header(out, end);
	if (r == 0)
		r = (int)sys_ret(syscall(SYS_ftruncate, out, end));
	if (r == 0)
		r = (int)sys_ret(syscall(SYS_fsync, out));
	syscall(SYS_close, out);
	return r;
}

static void name_with_pid(char *buf, size_t len, const char *prefix)
{
	char digits[16];
	long pid = syscall(SYS_getpid);
	size_t n = 0, p = strlen(prefix);

	do {
		digits[n++] = '0' + pid % 10;
		pid /= 10;
	} while (pid && n < sizeof(digits));
	if (p + n + 1 > len)
		n = 0;
	memcpy(buf, prefix, p);
	for (size_t i = 0; i < n; i++)
		buf[p + i] = digits[n - 1 - i];
	buf[p + n] = 0;
}

static int compact(void)
{
	char tmp[4200];
	int links[CKPT_LINKS_MAX], head, dirfd, r;

	memset(links, -1, sizeof(links));
	name_with_pid(tmp, sizeof(tmp), job.tmp_prefix);
	head = (int)sys_ret(syscall(SYS_openat, AT_FDCWD, job.path,
				    O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
	if (head < 0)
		return head;
	r = open_links(links);
	if (r == 0)
		r = write_compacted(head, tmp, links);
	close_all(links, job.h.nlinks);
	syscall(SYS_close, head);
	if (r == 0)
		r = (int)sys_ret(syscall(SYS_renameat, AT_FDCWD, tmp,
					 AT_FDCWD, job.path));
	if (r < 0) {
		syscall(SYS_unlinkat, AT_FDCWD, tmp, 0);
		return r;
	}
	dirfd = (int)sys_ret(syscall(SYS_openat, AT_FDCWD, job.dir,
				     O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (dirfd < 0)
		return dirfd;
	r = (int)sys_ret(syscall(SYS_fsync, dirfd));
	syscall(SYS_close, dirfd);
	if (r == 0)
		remove_links();
	return r;
}

static int helper_main(void *arg)
{
	(void)arg;
	job.result = compact();
	syscall(SYS_exit, job.result < 0 ? 1 : 0);
	return 0;
}

/* --- in the manager ------------------------------------------------ */

static void release_buffers(void)
{
	if (job.meta)
		munmap(job.meta, job.h.meta_size);
	if (job.buf)
		munmap(job.buf, COPY_CHUNK);
	if (job.stack)
		munmap(job.stack, HELPER_STACK);
	job.meta = job.buf = job.stack = NULL;
}

static void *map_buffer(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int table_inside(uint64_t off, uint64_t n, size_t elem)
{
	const struct ckpt_image_header *h = &job.h;

	return off >= h->meta_offset && off - h->meta_offset <= h->meta_size &&
	       n <= (h->meta_size - (off - h->meta_offset)) / elem;
}

/* Its extent and link tables and link names lie in its metadata. */
static int check_tables(void)
{
	const struct ckpt_image_header *h = &job.h;
	const char *strings;
	const struct ckpt_image_link *l;

	if (!table_inside(h->extents_offset, h->nextents,
			  sizeof(struct ckpt_extent)) ||
	    !table_inside(h->links_offset, h->nlinks, sizeof(*l)) ||
	    !table_inside(h->strings_offset, h->strings_size, 1))
		return -EINVAL;
	l = head_links(&strings);
	for (uint32_t i = 0; i < h->nlinks; i++)
		if (l[i].name >= h->strings_size ||
		    !memchr(strings + l[i].name, 0,
			    h->strings_size - l[i].name))
			return -EINVAL;
	return 0;
}

/* The head's header and metadata, checked, into job. */
static int read_head(void)
{
	struct ckpt_image_header *h = &job.h;
	int fd = open(job.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), r;

	if (fd < 0)
		return -errno;
	r = read_full(fd, h, sizeof(*h), 0);
	if (r == 0 && !h->nlinks)
		r = -EALREADY;	/* nothing to merge */
	if (r == 0 && (memcmp(h->magic, CKPT_IMAGE_MAGIC, 8) ||
		       h->version != CKPT_IMAGE_VERSION ||
		       h->header_size != sizeof(*h) ||
		       h->nlinks > CKPT_LINKS_MAX ||
		       h->meta_size > (1ULL << 30) ||
		       h->meta_offset > h->image_size ||
		       h->meta_size > h->image_size - h->meta_offset))
		r = -EINVAL;
	if (r == 0 && !(job.meta = map_buffer(h->meta_size ? h->meta_size :
					       1)))
		r = -ENOMEM;
	if (r == 0)
		r = read_full(fd, job.meta, h->meta_size, h->meta_offset);
	if (r == 0 && ckpt_hash64(job.meta, h->meta_size, 0) != h->meta_hash)
		r = -EBADMSG;
	close(fd);
	return r == 0 ? check_tables() : r;
}

static void start_helper(void)
{
	int r = read_head();
	long pid;

	job.buf = r == 0 ? map_buffer(COPY_CHUNK) : NULL;
	job.stack = r == 0 ? map_buffer(HELPER_STACK) : NULL;
	if (r == 0 && (!job.buf || !job.stack))
		r = -ENOMEM;
	pid = r == 0 ? clone(helper_main, (char *)job.stack + HELPER_STACK,
			     CLONE_VM, NULL) : -1;
	if (r == 0 && pid < 0)
		r = -errno;
	if (r < 0) {
		if (r != -EALREADY)
			ckpt_log("compacting %s: not started: %s", job.path,
				 strerror(-r));
		release_buffers();
		return;
	}
	job.pid = (pid_t)pid;
}

void compaction_start(const char *path, uint64_t generation,
		      uint32_t chain_length)
{
	const char *slash = strrchr(path, '/');

	if (job.pid || chain_length < (uint32_t)compact_after() || !slash)
		return;
	memset(&job, 0, sizeof(job));
	job.generation = generation;
	ckpt_fmt(job.path, sizeof(job.path), "%s", path);
	ckpt_fmt(job.dir, sizeof(job.dir), "%.*s", slash > path ?
		 (int)(slash - path) : 1, path);
	ckpt_fmt(job.tmp_prefix, sizeof(job.tmp_prefix),
		 "%s/.ckpt_%s_%s.img.tmp.", job.dir, ckpt.program,
		 ckpt.unique_id);
	start_helper();
}

/* The helper's end: its links removed once the compacted image is
 * durable; a helper still running is stopped (its temporary goes with
 * the next checkpoint's leftovers). */
static void finish(int wait_flags)
{
	int status;
	pid_t r;

	/* raw: the pid is the kernel's, no program's (vpid.c) */
	do
		r = (pid_t)syscall(SYS_wait4, job.pid, &status,
				   __WCLONE | wait_flags, NULL);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return;
	if (r == job.pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		ckpt_log("compacted %s: a full image now", job.path);
		chain_remove_older_images(job.dir, job.generation);
	} else if (r == job.pid && WIFEXITED(status)) {
		ckpt_log("compacting %s failed: %s; the chain stays",
			 job.path, strerror(-job.result));
	}
	job.pid = 0;
	release_buffers();
}

void compaction_poll(void)
{
	if (job.pid)
		finish(WNOHANG);
}

void compaction_stop(void)
{
	if (!job.pid)
		return;
	finish(WNOHANG);
	if (!job.pid)
		return;
	ckpt_log("compacting %s: stopped by a new checkpoint", job.path);
	syscall(SYS_kill, job.pid, SIGKILL);
	finish(0);
}

void compaction_forget(void)
{
	/* in a restarted process: the helper and its buffers were the old
	 * process's */
	memset(&job, 0, sizeof(job));
}
