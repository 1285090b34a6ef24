/* SPDX-License-Identifier: GPL-2.0 */
/* Internal declarations of ckpt_accel.ko, shared by its three files. */
#ifndef CKPT_ACCEL_INTERNAL_H
#define CKPT_ACCEL_INTERNAL_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <ckpt/accel.h>

struct mm_struct;

/* Live kernel objects of open requests; must be 0 at unload. */
extern atomic_t ckpt_accel_live_objects;

/* The mm of pid (0: the caller), if the caller may touch it. */
struct mm_struct *ckpt_accel_get_target_mm(pid_t pid);

enum ckpt_accel_walk_mode {
	CKPT_ACCEL_WALK_POPULATED,
	CKPT_ACCEL_WALK_DIRTY,
};

/*
 * Walk [req->start, req->end) of mm and write the runs to req->runs;
 * fills req->next, req->nr_runs and req->nr_pages. 0 or -errno.
 */
int ckpt_accel_walk_runs(struct mm_struct *mm, enum ckpt_accel_walk_mode mode,
			 struct ckpt_accel_range *req);

#endif
