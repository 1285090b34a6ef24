/* SPDX-License-Identifier: (GPL-2.0 OR LGPL-2.1-or-later) */
/*
 * The ckpt accelerator: the versioned ioctl interface of /dev/ckpt_accel
 * (kernel/ckpt_accel.ko) and the small userspace API of libckpt that
 * wraps it. One header for both sides; docs/kernel.md tells the story.
 *
 * Versioning: CKPT_ACCEL_IOC_VERSION returns the interface version and a
 * bitmask of supported operations. Userspace uses an operation only when
 * its bit is set, so a newer libckpt falls back cleanly on an older
 * module. Every request struct starts with its own size: a newer
 * userspace may pass a bigger struct as long as the bytes the module does
 * not know are zero; the command numbers encode the version-1 sizes and
 * never change.
 */
#ifndef CKPT_ACCEL_H
#define CKPT_ACCEL_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/ioctl.h>
#else
#include <linux/types.h>
#include <linux/ioctl.h>
#include <stddef.h>
#include <stdint.h>
#endif

#define CKPT_ACCEL_DEVICE	"/dev/ckpt_accel"
#define CKPT_ACCEL_VERSION	1

/* struct ckpt_accel_version.ops */
#define CKPT_ACCEL_OP_POPULATED	0x1	/* CKPT_ACCEL_IOC_POPULATED */
#define CKPT_ACCEL_OP_DIRTY	0x2	/* CKPT_ACCEL_IOC_DIRTY */

/* Limits the module enforces (bigger requests get EINVAL). */
#define CKPT_ACCEL_MAX_RUNS	(1u << 24)

struct ckpt_accel_version {
	__u32 version;			/* CKPT_ACCEL_VERSION of the module */
	__u32 ops;			/* CKPT_ACCEL_OP_* */
	__u32 range_size;		/* sizeof(struct ckpt_accel_range) */
	__u32 reserved;
};

/* One run of pages: [start, end), both page aligned. */
struct ckpt_accel_run {
	__u64 start;
	__u64 end;
};

/* struct ckpt_accel_range.flags for CKPT_ACCEL_IOC_DIRTY */
#define CKPT_ACCEL_DIRTY_CLEAR	0x1	/* restart tracking for the pages
					   examined (after reporting them) */
#define CKPT_ACCEL_DIRTY_NO_REPORT 0x2	/* only clear: runs/max_runs unused */

struct ckpt_accel_range {
	__u32 size;			/* sizeof(struct ckpt_accel_range) */
	__s32 pid;			/* 0: the calling process */
	__u64 start;			/* page aligned */
	__u64 end;			/* page aligned, > start */
	__u64 runs;			/* user pointer: ckpt_accel_run[max_runs] */
	__u32 max_runs;
	__u32 flags;
	/* out */
	__u64 next;			/* first address not examined; == end
					   when the whole range was done */
	__u64 nr_runs;			/* runs written to .runs */
	__u64 nr_pages;			/* pages in those runs */
};

#define CKPT_ACCEL_IOC_MAGIC	0xC7
/* Fills struct ckpt_accel_version. */
#define CKPT_ACCEL_IOC_VERSION	_IOR(CKPT_ACCEL_IOC_MAGIC, 0x00, \
				     struct ckpt_accel_version)
/*
 * Populated pages: the runs of pages of [start, end) that have a page
 * table entry (present or swapped), what /proc/PID/pagemap bits 63|62
 * report, without the 8 bytes per page of pagemap. Returns the number of
 * runs. When it equals max_runs, continue from .next.
 */
#define CKPT_ACCEL_IOC_POPULATED _IOWR(CKPT_ACCEL_IOC_MAGIC, 0x01, \
				       struct ckpt_accel_range)
/*
 * Dirty pages: the runs of pages of [start, end) written since tracking
 * was last cleared for them (CKPT_ACCEL_DIRTY_CLEAR), read from the
 * hardware dirty bit: no write faults while tracking. Conservative: a
 * page it cannot track (swapped, huge, file-backed, shared) is reported
 * dirty whenever it is populated. Pages that became unpopulated are not
 * reported: combine with CKPT_ACCEL_IOC_POPULATED. Returns the number of
 * runs; when it equals max_runs, continue from .next (with CLEAR, only
 * pages before .next were cleared).
 */
#define CKPT_ACCEL_IOC_DIRTY	_IOWR(CKPT_ACCEL_IOC_MAGIC, 0x02, \
				      struct ckpt_accel_range)

#ifndef __KERNEL__
/*
 * libckpt side (libckpt-preload/accel.c). None of these allocate or use
 * stdio: the memory writer calls them while application threads are
 * suspended. Each data call opens the device and closes it again, so no
 * descriptor of libckpt lives in the application's fd table.
 */

/* Probe the device and its version; 0 if usable, else -errno
 * (-ENOENT: no module loaded, -EPROTO: module too old). */
int ckpt_accel_open(void);
/* 1 if the last ckpt_accel_open() found a usable module, else 0. */
int ckpt_accel_available(void);
/* The CKPT_ACCEL_OP_* bits of the probed module (0 if none). */
unsigned int ckpt_accel_ops(void);
/*
 * Populated runs of [start, end) of the calling process into runs[max].
 * Returns the number of runs (if == max, call again from
 * runs[max - 1].end) or -errno.
 */
long ckpt_accel_populated_runs(uintptr_t start, uintptr_t end,
			       struct ckpt_accel_run *runs, size_t max);
/*
 * Dirty runs of [start, end) of the calling process; with clear != 0 the
 * examined pages start a new tracking interval. *next (if not NULL) gets
 * the first address not examined. Returns the number of runs or -errno.
 */
long ckpt_accel_dirty_runs(uintptr_t start, uintptr_t end,
			   struct ckpt_accel_run *runs, size_t max,
			   int clear, uintptr_t *next);
/* Start a new dirty-tracking interval for [start, end). 0 or -errno. */
int ckpt_accel_clear_dirty(uintptr_t start, uintptr_t end);
#endif

#endif /* CKPT_ACCEL_H */
