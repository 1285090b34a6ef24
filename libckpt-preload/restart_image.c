// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Memory mapped from the image the process was restarted from
 * (restart/loader/extent_map.c). /proc/self/maps shows it as a private
 * mapping of that file, "(deleted)" once a later checkpoint renamed a new
 * image over it, but it is the program's anonymous memory: memory.c saves
 * it whole, and wrappers/madvise.c keeps the semantics of anonymous
 * memory where a file mapping differs. It is known by the device and
 * inode /proc/self/maps shows for it right after the restart, never by
 * path; they stay valid after mremap, munmap, mprotect and fork (which
 * inherits this state), and the inode cannot be reused while mapped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "internal.h"

#define PAGE 4096UL
#define MAPS_CHUNK 8192
#define RANGES_BATCH 32

static struct {
	int known;
	unsigned major, minor;
	uint64_t ino;
	/* Every image-backed mapping lies inside [lo, hi): a quick test
	 * before /proc/self/maps is read (mremap moves widen it). */
	uint64_t lo, hi;
} image;

/* Calls fn for each line of /proc/self/maps until it returns non-zero;
 * only the fields before the path are read (a long path is skipped).
 * 0, fn's value, or -errno. */
static int each_vma(int (*fn)(const struct maps_vma *v, void *arg), void *arg)
{
	char buf[MAPS_CHUNK];
	size_t have = 0;
	int fd, skipping = 0, r = 0;
	ssize_t n;

	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (!r) {
		char *p = buf, *nl;

		n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		have += n;
		buf[have] = 0;
		while (!r && (nl = memchr(p, '\n', buf + have - p))) {
			struct maps_vma v;

			*nl = 0;
			if (!skipping && maps_vma_parse(p, &v) == 0)
				r = fn(&v, arg);
			skipping = 0;
			p = nl + 1;
		}
		if (n == 0 || r)
			break;
		have = buf + have - p;
		if (have == sizeof(buf) - 1) {	/* a line longer than buf */
			struct maps_vma v;

			if (!skipping && maps_vma_parse(buf, &v) == 0)
				r = fn(&v, arg);
			skipping = 1;
			have = 0;
		} else {
			memmove(buf, p, have);
		}
	}
	close(fd);
	return r;
}

int restart_image_backs(const struct maps_vma *v)
{
	return image.known && !v->shared && v->ino == image.ino &&
	       v->major == image.major && v->minor == image.minor;
}

static int find_vma_at(const struct maps_vma *v, void *arg)
{
	struct maps_vma *want = arg;

	if (want->start < v->start || want->start >= v->end)
		return 0;
	*want = *v;
	return 1;
}

static int widen_over(const struct maps_vma *v, void *arg)
{
	(void)arg;
	if (restart_image_backs(v)) {
		if (v->start < image.lo)
			image.lo = v->start;
		if (v->end > image.hi)
			image.hi = v->end;
	}
	return 0;
}

/* Called once per restart: the loader mapped memory from image_fd at
 * mapped_at (0: it copied everything, the process has none). */
void restart_image_note_mapped(uint64_t mapped_at, int image_fd)
{
	struct maps_vma v = { .start = mapped_at };
	struct stat st;

	memset(&image, 0, sizeof(image));
	if (!mapped_at)
		return;
	if (each_vma(find_vma_at, &v) == 1 && v.ino) {
		image.major = v.major;
		image.minor = v.minor;
		image.ino = v.ino;
	} else if (fstat(image_fd, &st) == 0) {
		image.major = major(st.st_dev);
		image.minor = minor(st.st_dev);
		image.ino = st.st_ino;
	} else {
		ckpt_log("restart: the mapped image is not found in "
			 "/proc/self/maps; its memory will be saved by "
			 "reference\n");
		return;
	}
	image.known = 1;
	image.lo = ~0ULL;
	each_vma(widen_over, NULL);
}

int restart_image_may_back(const void *addr, size_t len)
{
	uint64_t a = (uintptr_t)addr;

	return image.known && a < __atomic_load_n(&image.hi, __ATOMIC_RELAXED)
	       && a + len > __atomic_load_n(&image.lo, __ATOMIC_RELAXED);
}

/* *slot = v if v is below (lower = 1) or above it, atomically. */
static void store_if(uint64_t *slot, uint64_t v, int lower)
{
	uint64_t cur = __atomic_load_n(slot, __ATOMIC_RELAXED);

	while (lower ? v < cur : v > cur)
		if (__atomic_compare_exchange_n(slot, &cur, v, 0,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			break;
}

void restart_image_moved_to(const void *addr, size_t len)
{
	uint64_t a = (uintptr_t)addr;

	if (!image.known)
		return;
	store_if(&image.lo, a, 1);
	store_if(&image.hi, a + len, 0);
}

struct image_ranges {
	uint64_t lo, hi;
	int n;
	struct maps_vma v[RANGES_BATCH];
};

static int collect_backed(const struct maps_vma *v, void *arg)
{
	struct image_ranges *ir = arg;

	if (v->end <= ir->lo || v->start >= ir->hi || !restart_image_backs(v))
		return 0;
	ir->v[ir->n] = *v;
	ir->v[ir->n].start = v->start > ir->lo ? v->start : ir->lo;
	ir->v[ir->n].end = v->end < ir->hi ? v->end : ir->hi;
	return ++ir->n == RANGES_BATCH;
}

/* [s, e) with prot becomes fresh anonymous memory, its content kept or
 * zero (what MADV_DONTNEED gives anonymous memory). */
static int replace_with_anonymous(uint64_t s, uint64_t e, int prot, int keep)
{
	void *p, *want = (void *)(uintptr_t)s;

	if (!keep)
		return mmap(want, e - s, prot, MAP_PRIVATE | MAP_ANONYMOUS |
			    MAP_FIXED, -1, 0) == MAP_FAILED ? -errno : 0;
	p = mmap(NULL, e - s, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		 MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (!(prot & PROT_READ))
		mprotect(want, e - s, prot | PROT_READ);
	memcpy(p, want, e - s);
	if (mremap(p, e - s, e - s, MREMAP_MAYMOVE | MREMAP_FIXED, want) ==
	    MAP_FAILED || mprotect(want, e - s, prot) < 0) {
		int err = -errno;

		munmap(p, e - s);
		return err;
	}
	return 0;
}

/* Every image-backed page of [addr, addr + len) becomes anonymous
 * memory: zero (keep = 0) or with its content (keep = 1). */
int restart_image_make_anonymous(void *addr, size_t len, int keep)
{
	struct image_ranges ir;
	int r;

	ir.lo = (uintptr_t)addr & ~(PAGE - 1);
	ir.hi = ((uintptr_t)addr + len + PAGE - 1) & ~(PAGE - 1);
	do {
		ir.n = 0;
		r = each_vma(collect_backed, &ir);
		if (r < 0)
			return r;
		for (int i = 0; i < ir.n && r >= 0; i++)
			r = replace_with_anonymous(ir.v[i].start, ir.v[i].end,
						   ir.v[i].prot, keep);
		if (r < 0)
			return r;
	} while (ir.n == RANGES_BATCH);
	return 0;
}
