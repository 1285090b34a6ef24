/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Forked checkpoints (docs/embedding.md, "Forked checkpoints"): the
 * manager thread, with every other thread stopped and every resource the
 * kernel holds for the process already read into libckpt's tables and the
 * image writer's (fd offsets, drained pipes, timers, maps and pagemap),
 * forks a frozen copy of the process that writes the image from its own
 * copy-on-write memory and fsyncs it, while the original runs on.
 *
 * Before the original resumes, the copy makes its private copy of what
 * fork does not freeze: MAP_SHARED anonymous memory (mapped over with
 * private memory holding the same bytes) and the content the image takes
 * from descriptors (deleted files, saved files, drained pipes: copied
 * into memfds). It then closes every descriptor of the program, so that
 * a pipe's reader still sees EOF and a peer its close, and says READY.
 *
 * The copy is no child the program can see: a raw clone with no exit
 * signal (no SIGCHLD; waitpid without __WALL/__WCLONE never reports it),
 * made without fork's atfork handlers (it never joins the coordinator),
 * with every signal blocked (the manager's mask). It dies with the
 * manager thread (PR_SET_PDEATHSIG), so it never outlives the process.
 * It reports through one shared anonymous page (no descriptor a fork of
 * the program could inherit; MADV_DONTFORK once the copy exists).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "image_writer.h"
#include "internal.h"

enum copy_stage { COPY_STARTED, COPY_READY, COPY_DONE };

/* The page both processes see. */
struct copy_report {
	int stage;			/* enum copy_stage; futex word */
	int error;			/* 0 or -errno of the stage */
	char message[512];
};

static struct {
	pid_t pid;			/* 0: no copy */
	siginfo_t death;		/* how it ended, when it died early */
	struct copy_report *report;
	char tmp[4096];
} copy;

#define COPY_POLL_MS		100
#define COPY_READY_MAX_MS	60000

static void report_stage(struct copy_report *rep, int stage, int error)
{
	rep->error = error;
	__atomic_store_n(&rep->stage, stage, __ATOMIC_RELEASE);
	syscall(SYS_futex, &rep->stage, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* ----- in the copy ----- */

/* MAP_SHARED anonymous memory stays shared with the original across the
 * fork: replace it, in the copy only, by private memory holding the
 * bytes the image saves. */
static int privatize_region(struct image_writer *w, struct ckpt_region *r,
			    char *err, size_t errlen)
{
	const struct ckpt_extent *e = (const struct ckpt_extent *)
				      w->extents.base + r->first_extent;
	size_t len = r->end - r->start;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		goto fail;
	for (uint32_t i = 0; i < r->nextents; i++)
		memcpy(p + (e[i].addr - r->start),
		       (void *)(uintptr_t)e[i].addr, e[i].len);
	if (mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
		   (void *)(uintptr_t)r->start) != MAP_FAILED)
		return 0;
fail:
	ckpt_fmt(err, errlen, "copying shared memory %#lx-%#lx: %s",
		 (unsigned long)r->start, (unsigned long)r->end,
		 strerror(errno));
	return -errno;
}

static int privatize_shared_memory(struct image_writer *w, char *err,
				   size_t errlen)
{
	struct ckpt_region *r = (struct ckpt_region *)w->regions.base;

	for (size_t i = 0; i < w->regions.n; i++) {
		int rc;

		if (r[i].kind != CKPT_REGION_ANON_SHARED || !r[i].nextents)
			continue;
		rc = privatize_region(w, &r[i], err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

#define CONTENT_CHUNK	(1UL << 20)

/* pread/pwrite from *in on: copy_file_range refuses to span file system
 * types (a deleted file on ext4 into a memfd: EXDEV). */
static int copy_by_reading(int fd, int mfd, loff_t in, uint64_t size)
{
	char *buf = mmap(NULL, CONTENT_CHUNK, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int r = 0;

	if (buf == MAP_FAILED)
		return -ENOMEM;
	while ((uint64_t)in < size && r == 0) {
		size_t want = size - in < CONTENT_CHUNK ? size - in :
			      CONTENT_CHUNK;
		ssize_t n = pread(fd, buf, want, in);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			r = n < 0 ? -errno : -EIO;
		else
			r = write_all(mfd, buf, n, in);
		if (n > 0)
			in += n;
	}
	munmap(buf, CONTENT_CHUNK);
	return r;
}

static int copy_content(int fd, int mfd, uint64_t size)
{
	loff_t in = 0, out = 0;

	while ((uint64_t)in < size) {
		ssize_t n = copy_file_range(fd, &in, mfd, &out, size - in, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EXDEV || errno == EINVAL ||
			      errno == EOPNOTSUPP || errno == ENOSYS))
			return copy_by_reading(fd, mfd, in, size);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/* A memfd holding the size bytes of fd from offset 0 on. */
static int content_copy(int fd, uint64_t size)
{
	int mfd = memfd_create("ckpt-copy-content", MFD_CLOEXEC), r;

	if (mfd < 0)
		return -errno;
	r = copy_content(fd, mfd, size);
	if (r < 0) {
		close(mfd);
		return r;
	}
	return mfd;
}

/* The content the image takes from descriptors, which the original may
 * change once it runs (a file it writes, a pipe it reads again). */
static int hold_blobs(struct image_writer *w, char *err, size_t errlen)
{
	struct blob *b = (struct blob *)w->blobs.base;

	for (size_t i = 0; i < w->blobs.n; i++) {
		int mfd;

		if (b[i].mem)	/* the copy's own memory already */
			continue;
		mfd = content_copy(b[i].fd, b[i].size);

		if (mfd < 0) {
			ckpt_fmt(err, errlen, "copying the content saved "
				 "with fd %d: %s", b[i].fd, strerror(-mfd));
			return mfd;
		}
		b[i].fd = mfd;
	}
	return 0;
}

static int is_blob_fd(const struct image_writer *w, int fd)
{
	const struct blob *b = (const struct blob *)w->blobs.base;

	for (size_t i = 0; i < w->blobs.n; i++)
		if (b[i].fd == fd)
			return 1;
	return 0;
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Every descriptor but the blobs' copies: the copy holds no end of the
 * program's pipes and sockets. getdents64 itself: opendir mallocs. */
static void close_program_fds(const struct image_writer *w)
{
	char buf[4096];
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	if (dir < 0)
		return;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (void *)(buf + off);
			int fd = 0;

			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			for (const char *c = d->d_name; *c; c++)
				fd = fd * 10 + (*c - '0');
			if (fd != dir && !is_blob_fd(w, fd))
				close(fd);
		}
	}
	close(dir);
}

/* In a frozen copy (this one, or a snapshot's template): its own copy of
 * what the original may change once it resumes (shared memory, the
 * content the image takes from descriptors). 0 or -errno (err says). */
int forked_copy_hold_data(struct image_writer *w, char *err, size_t errlen)
{
	int r = privatize_shared_memory(w, err, errlen);

	return r < 0 ? r : hold_blobs(w, err, errlen);
}

static void run_copy(struct image_writer *w, pid_t original,
		     const struct forked_image *img)
{
	struct copy_report *rep = copy.report;
	int r;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* the original died meanwhile (the raw call: libckpt's getppid
	 * gives virtual pids) */
	if (syscall(SYS_getppid) != original)
		syscall(SYS_exit_group, 1);
	rep->message[0] = 0;
	r = forked_copy_hold_data(w, rep->message, sizeof(rep->message));
	close_program_fds(w);
	report_stage(rep, COPY_READY, r);
	if (r == 0)
		r = image_write_in_copy(w, img, rep->message,
					sizeof(rep->message));
	report_stage(rep, COPY_DONE, r);
	syscall(SYS_exit_group, r ? 1 : 0);
}

/* ----- in the original ----- */

/* Whether the copy must take its own copy of something before the
 * original resumes: shared memory it saves, content from descriptors. */
int forked_copy_holds_changing_data(const struct image_writer *w)
{
	const struct ckpt_region *r = (const struct ckpt_region *)
				      w->regions.base;

	if (w->blobs.n)
		return 1;
	for (size_t i = 0; i < w->regions.n; i++)
		if (r[i].kind == CKPT_REGION_ANON_SHARED && r[i].nextents)
			return 1;
	return 0;
}

/* Wait (bounded) until the copy passed `stage` or is gone: 0 or -errno
 * (-ETIMEDOUT; -ECHILD when it died without saying). */
static int wait_stage(int stage, int max_ms)
{
	struct timespec slice = { 0, COPY_POLL_MS * 1000000L };
	siginfo_t si;

	for (int waited = 0; waited <= max_ms; waited += COPY_POLL_MS) {
		int now = __atomic_load_n(&copy.report->stage,
					  __ATOMIC_ACQUIRE);

		if (now >= stage)
			return copy.report->error;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, copy.pid, &si, WEXITED | WNOWAIT | WNOHANG |
			   __WCLONE) == 0 && si.si_pid == copy.pid &&
		    __atomic_load_n(&copy.report->stage, __ATOMIC_ACQUIRE) <
		    stage) {
			copy.death = si;
			return -ECHILD;
		}
		syscall(SYS_futex, &copy.report->stage, FUTEX_WAIT, now,
			&slice, NULL, 0);
	}
	return -ETIMEDOUT;
}

static void copy_reap(void)
{
	if (copy.pid > 0) {
		kill(copy.pid, SIGKILL);
		while (waitpid(copy.pid, NULL, __WCLONE) < 0 && errno == EINTR)
			;
	}
	if (copy.report)
		munmap(copy.report, sizeof(*copy.report));
	copy.pid = 0;
	copy.report = NULL;
}

static void copy_error(int r, const char *what, char *err, size_t errlen)
{
	if (r == -ECHILD && copy.death.si_code == CLD_EXITED)
		ckpt_fmt(err, errlen, "the checkpoint copy (pid %d) exited "
			 "with status %d %s", (int)copy.pid,
			 copy.death.si_status, what);
	else if (r == -ECHILD)
		ckpt_fmt(err, errlen, "the checkpoint copy (pid %d) was killed "
			 "by signal %d %s", (int)copy.pid,
			 copy.death.si_status, what);
	else if (r == -ETIMEDOUT)
		ckpt_fmt(err, errlen, "the checkpoint copy (pid %d) took too "
			 "long %s; killed", (int)copy.pid, what);
	else
		ckpt_fmt(err, errlen, "the checkpoint copy %s: %s", what,
			 copy.report->message[0] ? copy.report->message :
			 strerror(-r));
}

/* Called with every other thread stopped, the tables of w complete: fork
 * the copy that writes img and wait until it holds its own copy of
 * everything the original may change. 0: the original may resume;
 * -errno (err says why): no copy is left. */
int forked_copy_start(struct image_writer *w, const struct forked_image *img,
		      char *err, size_t errlen)
{
	pid_t original = ckpt_real_getpid();
	long pid;
	int r;

	copy.report = mmap(NULL, sizeof(*copy.report), PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (copy.report == MAP_FAILED) {
		copy.report = NULL;
		ckpt_fmt(err, errlen, "mapping the checkpoint copy's report "
			 "page: %s", strerror(errno));
		return -ENOMEM;
	}
	ckpt_fmt(copy.tmp, sizeof(copy.tmp), "%s", img->tmp_path);
	copy.report->stage = COPY_STARTED;
	pid = syscall(SYS_clone, 0, NULL, NULL, NULL, 0);
	if (pid == 0)
		run_copy(w, original, img);	/* never returns */
	if (pid < 0) {
		r = -errno;
		ckpt_fmt(err, errlen, "forking the checkpoint copy: %s",
			 strerror(-r));
		copy_reap();
		return r;
	}
	copy.pid = pid;
	madvise(copy.report, sizeof(*copy.report), MADV_DONTFORK);
	if (!forked_copy_holds_changing_data(w))
		return 0;	/* nothing the original could change under it */
	r = wait_stage(COPY_READY, COPY_READY_MAX_MS);
	if (r < 0) {
		copy_error(r, "before the process resumed", err, errlen);
		forked_copy_cancel();
	}
	return r;
}

/* After the resume: wait (at most max_ms) until the copy wrote and
 * synced the image. 0, or -errno (err says why; the image is removed). */
int forked_copy_finish(int max_ms, char *err, size_t errlen)
{
	int r;

	if (!copy.pid)
		return -ECHILD;
	r = wait_stage(COPY_DONE, max_ms);
	if (r < 0) {
		copy_error(r, "writing the image", err, errlen);
		forked_copy_cancel();
		return r;
	}
	copy_reap();
	return 0;
}

/* The round ended early (an abort, a failure elsewhere): the copy is
 * killed and reaped before its temporary image is removed. */
void forked_copy_cancel(void)
{
	if (!copy.pid && !copy.report)
		return;
	copy_reap();
	unlink(copy.tmp);
}
