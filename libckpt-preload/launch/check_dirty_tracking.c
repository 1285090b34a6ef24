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
#define CHECK_PAGEMAP_SCAN	_IOWR('f', 16, struct check_pm_scan_arg)
#define CHECK_PAGE_IS_PRESENT	(1 << 1)

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

/* The ioctl on our own pagemap, over one page: ENOTTY from a kernel
 * without it. */
void check_pagemap_scan(struct check *c)
{
	static char page[4096] __attribute__((aligned(4096)));
	struct check_pm_scan_arg arg = {
		.size = sizeof(arg),
		.start = (uintptr_t)page,
		.end = (uintptr_t)page + sizeof(page),
		.category_mask = CHECK_PAGE_IS_PRESENT,
		.return_mask = CHECK_PAGE_IS_PRESENT,
	};
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int r = -1, err = errno;

	if (fd >= 0) {
		r = ioctl(fd, CHECK_PAGEMAP_SCAN, &arg);
		err = errno;
		close(fd);
	}
	c->name = "pagemap_scan";
	c->available = fd >= 0 && (r >= 0 || err != ENOTTY);
	snprintf(c->detail, sizeof(c->detail), "%s", c->available ?
		 "the PAGEMAP_SCAN ioctl (Linux 6.7) is present" :
		 fd < 0 ? strerror(err) :
		 "no PAGEMAP_SCAN ioctl (Linux 6.7 and later have it)");
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
