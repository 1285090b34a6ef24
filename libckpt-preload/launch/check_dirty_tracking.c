// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_check: what could tell ckpt which pages a program wrote since the
 * last checkpoint (docs/kernel.md, "Dirty pages"), and the ckpt_accel
 * module. Only probed: the module is never loaded by ckpt_check.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ckpt/accel.h"
#include "check.h"

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC	(1 << 15)	/* Linux 6.7 */
#endif

/* Linux 6.7's PAGEMAP_SCAN (include/uapi/linux/fs.h); Debian 12's headers
 * predate it. */
struct check_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask;
	uint64_t return_mask;
};
struct check_page_region {
	uint64_t start, end, categories;
};
#define CHECK_PAGEMAP_SCAN	_IOWR('f', 16, struct check_pm_scan_arg)
#define CHECK_SCAN_WP_MATCHING	(1 << 0)
#define CHECK_SCAN_CHECK_WPASYNC (1 << 1)
#define CHECK_PAGE_IS_WRITTEN	(1 << 1)
#define CHECK_PAGE_IS_PRESENT	(1 << 3)
#define CHECK_SCAN_PAGES	4

static const char dirty_fallback[] = "ckpt saves every populated page at "
	"every checkpoint; without a kernel dirty-page tracker an "
	"incremental checkpoint must read every page to find the written "
	"ones";

/* A userfaultfd of our own: the system call with UFFD_USER_MODE_ONLY
 * (no privilege needed since Linux 5.11), else /dev/userfaultfd. */
static int open_userfaultfd(int *err)
{
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK |
			 UFFD_USER_MODE_ONLY);
	int dev;

	if (fd >= 0)
		return fd;
	*err = errno;
	dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -1;
	fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
	close(dev);
	return fd;
}

/* The features this kernel's userfaultfd offers; -errno if none. */
static int64_t userfaultfd_features(void)
{
	static int64_t features;
	static int probed;
	struct uffdio_api api = { .api = UFFD_API };
	int err = 0, fd;

	if (probed)
		return features;
	probed = 1;
	fd = open_userfaultfd(&err);
	if (fd < 0)
		return features = -(err ? err : errno);
	features = ioctl(fd, UFFDIO_API, &api) < 0 ? -errno :
						      (int64_t)api.features;
	close(fd);
	return features;
}

void check_userfaultfd(struct check *c)
{
	int64_t f = userfaultfd_features();

	c->name = "userfaultfd";
	c->available = f >= 0;
	if (f >= 0)
		snprintf(c->value, sizeof(c->value), "%#llx",
			 (unsigned long long)f);
	snprintf(c->detail, sizeof(c->detail), "%s%s", f >= 0 ?
		 "userfaultfd(2) available to this user, features " :
		 "userfaultfd(2): ", f >= 0 ? c->value : strerror(-f));
	if (f < 0)
		snprintf(c->without, sizeof(c->without), "%s",
			 dirty_fallback);
}

void check_uffd_wp(struct check *c)
{
	int64_t f = userfaultfd_features();

	c->name = "uffd_wp";
	c->available = f >= 0 && (f & UFFD_FEATURE_PAGEFAULT_FLAG_WP);
	snprintf(c->detail, sizeof(c->detail), "userfaultfd write-protect: "
		 "%s; asynchronous (UFFD_FEATURE_WP_ASYNC): %s",
		 c->available ? "yes" : "no",
		 f >= 0 && (f & UFFD_FEATURE_WP_ASYNC) ? "yes" : "no");
	if (!c->available)
		snprintf(c->without, sizeof(c->without), "%s",
			 dirty_fallback);
}

/* The written pages of [start, end) into vec, protected again (what
 * libckpt's dirty_pages.c asks): how many ranges, or -errno. */
static long scan_written(int pagemap, char *start, char *end,
			 struct check_page_region *vec, int vec_len)
{
	struct check_pm_scan_arg arg = {
		.size = sizeof(arg),
		.flags = CHECK_SCAN_WP_MATCHING | CHECK_SCAN_CHECK_WPASYNC,
		.start = (uintptr_t)start, .end = (uintptr_t)end,
		.vec = (uintptr_t)vec, .vec_len = vec_len,
		.category_mask = CHECK_PAGE_IS_WRITTEN,
		.category_anyof_mask = CHECK_PAGE_IS_PRESENT,
		.return_mask = CHECK_PAGE_IS_WRITTEN,
	};
	long n = ioctl(pagemap, CHECK_PAGEMAP_SCAN, &arg);

	return n < 0 ? -errno : n;
}

/* userfaultfd with asynchronous write-protection over pages of ours,
 * registered for write-protect: -errno. */
static int open_wp_async(char *pages, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_WP_ASYNC };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)pages, .len = len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	int err = 0, fd = open_userfaultfd(&err);

	if (fd < 0)
		return -(err ? err : errno);
	if (ioctl(fd, UFFDIO_API, &api) < 0 ||
	    ioctl(fd, UFFDIO_REGISTER, &reg) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

/* Protect every page (the first scan), write the third, scan again: 0
 * when exactly that page comes back. */
static int scan_finds_one_write(int pagemap, char *pages, size_t psize,
				char *why, size_t len)
{
	struct check_page_region vec[CHECK_SCAN_PAGES];
	char *end = pages + CHECK_SCAN_PAGES * psize;
	long n = scan_written(pagemap, pages, end, vec, CHECK_SCAN_PAGES);

	if (n >= 0) {
		pages[2 * psize] = 2;
		n = scan_written(pagemap, pages, end, vec, CHECK_SCAN_PAGES);
	}
	if (n < 0) {
		if (n != -ENOTTY)
			snprintf(why, len, "PAGEMAP_SCAN: %s", strerror(-n));
		return n;
	}
	if (n != 1 || vec[0].start != (uintptr_t)pages + 2 * psize ||
	    vec[0].end != vec[0].start + psize) {
		snprintf(why, len, "PAGEMAP_SCAN found %ld written ranges "
			 "where one page was written", n);
		return -EIO;
	}
	return 0;
}

/*
 * The way libckpt tracks written pages (dirty_pages.c), end to end:
 * pages registered with an asynchronous write-protecting userfaultfd,
 * one PAGEMAP_SCAN protects them, a write to one, the next scan returns
 * exactly that page. 0, -ENOTTY (no ioctl), else -errno with why said.
 */
static int pagemap_scan_tracks_writes(char *why, size_t len)
{
	size_t psize = sysconf(_SC_PAGESIZE), size = CHECK_SCAN_PAGES * psize;
	char *pages = mmap(NULL, size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int uffd, pagemap, r;

	if (pages == MAP_FAILED) {
		snprintf(why, len, "mmap: %s", strerror(errno));
		return -ENOMEM;
	}
	memset(pages, 1, size);
	uffd = open_wp_async(pages, size);
	pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	r = uffd < 0 ? uffd : pagemap < 0 ? -errno : 0;
	if (uffd < 0)
		snprintf(why, len, "no asynchronous userfaultfd "
			 "write-protection (Linux 6.7) to scan with: %s",
			 strerror(-uffd));
	else if (pagemap < 0)
		snprintf(why, len, "/proc/self/pagemap: %s", strerror(-r));
	else
		r = scan_finds_one_write(pagemap, pages, psize, why, len);
	if (pagemap >= 0)
		close(pagemap);
	if (uffd >= 0)
		close(uffd);
	munmap(pages, size);
	return r;
}

void check_pagemap_scan(struct check *c)
{
	char why[256] = "";
	int r = pagemap_scan_tracks_writes(why, sizeof(why));

	c->name = "pagemap_scan";
	c->available = r == 0;
	snprintf(c->detail, sizeof(c->detail), "%s", r == 0 ?
		 "PAGEMAP_SCAN (Linux 6.7) finds the pages written in a range "
		 "userfaultfd write-protects asynchronously: incremental "
		 "checkpoints read only those" : r == -ENOTTY ?
		 "no PAGEMAP_SCAN ioctl (Linux 6.7 and later have it)" : why);
	if (!c->available)
		snprintf(c->without, sizeof(c->without), "%s",
			 dirty_fallback);
}

void check_accel(struct check *c)
{
	struct stat st;
	int r = ckpt_accel_open();
	bool loaded = stat("/sys/module/ckpt_accel", &st) == 0;

	c->name = "ckpt_accel";
	c->available = r == 0;
	snprintf(c->value, sizeof(c->value), "%s", r == 0 ? "usable" :
		 loaded ? "loaded" : "absent");
	if (r == 0)
		snprintf(c->detail, sizeof(c->detail), "%s answers, operations "
			 "%#x", CKPT_ACCEL_DEVICE, ckpt_accel_ops());
	else if (r == -EPROTO)
		snprintf(c->detail, sizeof(c->detail), "%s is older than this "
			 "ckpt", CKPT_ACCEL_DEVICE);
	else
		snprintf(c->detail, sizeof(c->detail), "module %s, %s: %s",
			 loaded ? "loaded" : "not loaded", CKPT_ACCEL_DEVICE,
			 strerror(-r));
	if (r)
		snprintf(c->without, sizeof(c->without), "populated pages are "
			 "found through /proc/PID/pagemap (8 bytes read per "
			 "page: slower for large sparse reservations); no "
			 "hardware dirty-bit tracking (docs/kernel.md)");
}
