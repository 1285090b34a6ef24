/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which pages were written since the previous incremental image, from the
 * kernel instead of by hashing every page (docs/performance.md, "Dirty
 * pages"): every saved private mapping is registered with a userfaultfd in
 * asynchronous write-protect mode (UFFD_FEATURE_WP_ASYNC, Linux >= 6.7),
 * and one PAGEMAP_SCAN ioctl per mapping returns the pages written since
 * they were last write-protected (PM_SCAN_WP_MATCHING, after the image:
 * below). A
 * write to a protected page, by the program or by the kernel on its
 * behalf (read() into a buffer), takes a minor fault that the kernel
 * resolves by clearing the page's protection: the page then reads as
 * written. Only present (or swapped) pages are protected, so a huge
 * reservation costs no page tables; a page that is not present has no
 * data or is new.
 *
 * Protecting a page is the costly part (a TLB flush and, in this VM, a
 * trap per page: 20-30 us), so it is not done while the program is
 * stopped: the scan there only reads which pages are written, and once
 * the image is durable and the program runs again (dirty_pages_rearm) a
 * second scan protects the written pages. A page written between the
 * resume and that scan is among the ones it protects, which are kept
 * ("carried") and count as written in the next image too: the next
 * image's written pages are those of its own scan and the carried ones.
 *
 * A page may be taken from the previous image only if its mapping was
 * scanned when that image was read and is scanned again now without a
 * gap: PM_SCAN_CHECK_WPASYNC fails on a mapping that is not registered
 * (made since, moved by mremap, mapped over with MAP_FIXED, grown by
 * brk), which is then counted as written and registered. The written
 * pages are relative to the image read right after the last scan, and to
 * no other: if that image is not the one committed (a failed checkpoint)
 * or the process was restarted or forked since, every page is compared
 * by its hash (image_chain.c), as when the kernel lacks the feature,
 * userfaultfd is refused, or CKPT_DIRTY_TRACKING=hash.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ckpt/image.h"
#include "dirty_pages.h"
#include "internal.h"

/* Linux 6.7 uapi, absent from older headers (Debian 12 has 6.1's). */
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC	(1 << 15)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY	1
#endif
struct dirty_scan_arg {		/* struct pm_scan_arg */
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask;
	uint64_t return_mask;
};
struct dirty_region {		/* struct page_region */
	uint64_t start, end, categories;
};
#define DIRTY_PAGEMAP_SCAN	_IOWR('f', 16, struct dirty_scan_arg)
#define DIRTY_SCAN_WP_MATCHING	(1ULL << 0)
#define DIRTY_SCAN_CHECK_WPASYNC (1ULL << 1)
#define DIRTY_PAGE_IS_WRITTEN	(1ULL << 1)
#define DIRTY_PAGE_IS_PRESENT	(1ULL << 3)
#define DIRTY_PAGE_IS_SWAPPED	(1ULL << 4)

#define VEC_LEN		512
#define MAPPINGS_MAX	(1UL << 16)
#define WRITTEN_MAX	(1UL << 20)

struct mapping {
	uint64_t start, end;
	int tracked;		/* scanned now and at the base image */
};

struct range {
	uint64_t start, end;
};

static int uffd = -1;
static pid_t uffd_owner;
static int unavailable;		/* said once why not; hashes from then on */
static uint64_t armed_generation;	/* the image read after the last scan */
static uint64_t tracked_generation;	/* ... once durable and rearmed */

/* Fixed reservations, never grown: an mremap while the image is written
 * could move memory a listed region covers. */
static struct mapping *mappings;
static size_t nmappings;
static int mappings_overflow;
static struct range *written;
static size_t nwritten;
/* The pages dirty_pages_rearm() protected: written since the image of
 * tracked_generation was read, perhaps after it; and the room to merge
 * them with the next scan's. */
static struct range *carried, *merged;
static size_t ncarried;
static struct dirty_region vec[VEC_LEN];

static int wanted(void)
{
	const char *s = getenv("CKPT_DIRTY_TRACKING");

	return !(s && !strcmp(s, "hash"));
}

static void give_up(const char *why, int err)
{
	if (!unavailable)
		ckpt_log("incremental checkpoints: dirty pages by page hashes: "
			 "%s%s%s", why, err ? ": " : "", err ? strerror(err) :
			 "");
	unavailable = 1;
	if (uffd >= 0) {
		ckpt_mark_own_fd(uffd, 0);
		close(uffd);
	}
	uffd = -1;
}

static void *reserve(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* A forked child holds its parent's userfaultfd, which acts on the
 * parent's memory: its own is made afresh. */
static void drop_inherited(void)
{
	char link[64], target[64];
	ssize_t n;

	if (uffd < 0 || uffd_owner == (pid_t)syscall(SYS_getpid))
		return;
	ckpt_fmt(link, sizeof(link), "/proc/self/fd/%d", uffd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n > 0 && (target[n] = 0, strstr(target, "userfaultfd"))) {
		ckpt_mark_own_fd(uffd, 0);
		close(uffd);
	}
	uffd = -1;
	tracked_generation = 0;
}

static int open_uffd(void)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_WP_ASYNC };
	int fd;

	fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK |
		     UFFD_USER_MODE_ONLY);
	if (fd < 0) {
		give_up("userfaultfd refused", errno);
		return -1;
	}
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		close(fd);
		give_up("no asynchronous userfaultfd write-protection "
			"(Linux >= 6.7)", errno);
		return -1;
	}
	uffd = files_private_fd(fd);
	ckpt_mark_own_fd(uffd, 1);
	uffd_owner = (pid_t)syscall(SYS_getpid);
	ckpt_log("incremental checkpoints: dirty pages from userfaultfd "
		 "write-protection (PAGEMAP_SCAN)");
	return 0;
}

static int ready(void)
{
	if (unavailable || !wanted()) {
		if (!unavailable && !wanted())
			give_up("CKPT_DIRTY_TRACKING=hash", 0);
		return 0;
	}
	drop_inherited();
	if (!mappings)
		mappings = reserve(MAPPINGS_MAX * sizeof(*mappings));
	if (!written)
		written = reserve(WRITTEN_MAX * sizeof(*written));
	if (!carried)
		carried = reserve(WRITTEN_MAX * sizeof(*carried));
	if (!merged)
		merged = reserve(WRITTEN_MAX * sizeof(*merged));
	if (!mappings || !written || !carried || !merged) {
		give_up("no memory for its tables", ENOMEM);
		return 0;
	}
	return uffd >= 0 || open_uffd() == 0;
}

void dirty_pages_forget_mappings(void)
{
	nmappings = 0;
	mappings_overflow = 0;
}

void dirty_pages_note_mapping(uint64_t start, uint64_t end, int kind)
{
	if (kind == CKPT_REGION_ANON_SHARED || kind == CKPT_REGION_VDSO ||
	    kind == CKPT_REGION_FILE_SHARED || kind == CKPT_REGION_VVAR ||
	    kind == CKPT_REGION_VVAR_VCLOCK || !wanted() || unavailable)
		return;
	if (!mappings)
		mappings = reserve(MAPPINGS_MAX * sizeof(*mappings));
	if (!mappings || nmappings == MAPPINGS_MAX) {
		mappings_overflow = 1;
		return;
	}
	mappings[nmappings++] = (struct mapping){ .start = start,
						  .end = end };
}

/* [start, end) onto a sorted list of ranges, joined to the last one
 * where they touch or overlap. */
static int push_range(struct range *list, size_t *n, uint64_t start,
		      uint64_t end)
{
	if (*n && list[*n - 1].end >= start) {
		if (end > list[*n - 1].end)
			list[*n - 1].end = end;
		return 0;
	}
	if (*n == WRITTEN_MAX)
		return -ENOSPC;
	list[(*n)++] = (struct range){ start, end };
	return 0;
}

/* The written pages of [start, end) onto list (unless NULL); with
 * protect, all of them protected again. -EPERM if part of it is not
 * registered. */
static int scan_range(int pagemap, uint64_t start, uint64_t end,
		      struct range *list, size_t *n, int protect)
{
	struct dirty_scan_arg a = {
		.size = sizeof(a), .vec = (uintptr_t)vec, .vec_len = VEC_LEN,
		.flags = (protect ? DIRTY_SCAN_WP_MATCHING : 0) |
			 DIRTY_SCAN_CHECK_WPASYNC,
		.category_mask = DIRTY_PAGE_IS_WRITTEN,
		.category_anyof_mask = DIRTY_PAGE_IS_PRESENT |
				       DIRTY_PAGE_IS_SWAPPED,
		.return_mask = DIRTY_PAGE_IS_WRITTEN,
	};

	while (start < end) {
		long got;

		a.start = start;
		a.end = end;
		a.walk_end = 0;
		got = ioctl(pagemap, DIRTY_PAGEMAP_SCAN, &a);
		if (got < 0)
			return -errno;
		for (long i = 0; i < got && list; i++)
			if (push_range(list, n, vec[i].start, vec[i].end) < 0)
				return -ENOSPC;
		if (a.walk_end <= start)
			return -EIO;
		start = a.walk_end;
	}
	return 0;
}

/* The program closed our userfaultfd (a daemon closing every fd) and the
 * number may be its own file now: forget it, leave it open, make a new
 * one at the next image. */
static void lose_uffd(void)
{
	ckpt_mark_own_fd(uffd, 0);
	uffd = -1;
}

static int register_range(uint64_t start, uint64_t end)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = end - start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	return ioctl(uffd, UFFDIO_REGISTER, &reg) < 0 ? -errno : 0;
}

/*
 * One mapping, the program stopped: its written pages (protected again
 * by dirty_pages_rearm). A mapping not (wholly) registered counts as
 * written and is registered for the next image; one the kernel refuses
 * (another userfaultfd owns it) stays compared by hashes.
 */
static int track_mapping(int pagemap, struct mapping *m)
{
	size_t mark = nwritten;
	uint64_t mark_end = nwritten ? written[nwritten - 1].end : 0;
	int r = scan_range(pagemap, m->start, m->end, written, &nwritten, 0);

	if (r == 0) {
		m->tracked = 1;
		return 0;
	}
	if (r != -EPERM)
		return r;
	nwritten = mark;
	if (nwritten)
		written[nwritten - 1].end = mark_end;
	m->tracked = 0;
	r = register_range(m->start, m->end);
	if (r == -EBADF || r == -ENOTTY)
		lose_uffd();
	return 0;
}

/* The carried pages into the written ones (both sorted). */
static int merge_carried(void)
{
	size_t i = 0, k = 0, n = 0;
	struct range *swap;

	while (i < nwritten || k < ncarried) {
		const struct range *next =
			k == ncarried || (i < nwritten &&
					  written[i].start <= carried[k].start) ?
			&written[i++] : &carried[k++];

		if (push_range(merged, &n, next->start, next->end) < 0)
			return -ENOSPC;
	}
	swap = written;
	written = merged;
	merged = swap;
	nwritten = n;
	return 0;
}

int dirty_pages_collect(uint64_t base_generation, uint64_t generation)
{
	int valid = tracked_generation && tracked_generation == base_generation;
	int pagemap, r = 0;

	armed_generation = tracked_generation = 0;
	nwritten = 0;
	if (!ready())
		return 0;
	pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pagemap < 0) {
		give_up("opening /proc/self/pagemap", errno);
		return 0;
	}
	for (size_t i = 0; i < nmappings && r == 0; i++)
		r = track_mapping(pagemap, &mappings[i]);
	if (r == 0 && valid)
		r = merge_carried();
	close(pagemap);
	if (r == -ENOSPC || mappings_overflow) {
		ckpt_log("incremental checkpoint: too many written ranges or "
			 "mappings to track; this image compares page hashes");
		return 0;
	}
	if (r < 0) {
		give_up("PAGEMAP_SCAN failed (Linux >= 6.7 has it)", -r);
		return 0;
	}
	armed_generation = generation;
	if (base_generation && !valid)
		ckpt_log("incremental checkpoint: the pages written since the "
			 "previous image are not known (it was not the last "
			 "one read, or the process is new since); comparing "
			 "every page by its hash");
	return valid;
}

/* The last entry of a sorted table (stride bytes, start first) whose
 * start is at most addr, or NULL. */
static const void *find_le(const void *base, size_t n, size_t stride,
			   uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (*(const uint64_t *)((const char *)base + mid * stride) <=
		    addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (const char *)base + (lo - 1) * stride : NULL;
}

int dirty_page_unwritten(uint64_t addr)
{
	const struct mapping *m = find_le(mappings, nmappings,
					  sizeof(*mappings), addr);
	const struct range *w = find_le(written, nwritten, sizeof(*written),
					addr);

	return m && addr < m->end && m->tracked && !(w && addr < w->end);
}

uint64_t dirty_unwritten_until(uint64_t addr)
{
	const struct mapping *m = find_le(mappings, nmappings,
					  sizeof(*mappings), addr);
	const struct range *w = find_le(written, nwritten, sizeof(*written),
					addr);
	uint64_t end;

	if (!m || addr >= m->end || !m->tracked || (w && addr < w->end))
		return addr;
	end = m->end;
	w = w ? w + 1 : written;	/* the first written range above */
	if (w < written + nwritten && w->start < end)
		end = w->start;
	return end;
}

/* A mapping's written pages protected again, kept as carried; a part
 * no longer registered (unmapped, moved since) is left as it is: the
 * next image's scan finds it so (-EPERM). */
static int rearm_mapping(int pagemap, const struct mapping *m)
{
	int r = scan_range(pagemap, m->start, m->end, carried, &ncarried, 1);

	/* what was protected before the unregistered part stays carried */
	return r == -EPERM ? 0 : r;
}

void dirty_pages_rearm(uint64_t generation)
{
	int pagemap, r = 0;

	if (!generation || generation != armed_generation || uffd < 0)
		return;
	ncarried = 0;
	pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pagemap < 0)
		return;
	for (size_t i = 0; i < nmappings && r == 0; i++)
		r = rearm_mapping(pagemap, &mappings[i]);
	close(pagemap);
	if (r == 0)
		tracked_generation = generation;
	else
		ckpt_log("incremental checkpoint: protecting the written pages "
			 "again failed (%s); the next image compares page "
			 "hashes", strerror(-r));
}

void dirty_pages_after_restart(void)
{
	/* the descriptor number is the old process's: never ours here */
	uffd = -1;
	armed_generation = tracked_generation = 0;
	nmappings = nwritten = ncarried = 0;
}
