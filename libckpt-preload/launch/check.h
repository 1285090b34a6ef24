/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ckpt_check's probes: each fills one struct check with what this
 * machine offers and what ckpt does without it (docs/ckpt_check.md).
 */
#ifndef CKPT_LAUNCH_CHECK_H
#define CKPT_LAUNCH_CHECK_H

#include <stdbool.h>

struct check {
	const char *name;	/* "rseq", "userfaultfd", ... */
	bool available;
	bool required;		/* ckpt cannot checkpoint or restart here
				   without it: ckpt_check exits 1 */
	char value[4096];	/* the probed value, for scripts: a kernel
				   release, a sysctl, an address, a path */
	char detail[8192];	/* what was found */
	char without[512];	/* what ckpt does without it ("" if
				   available and nothing to add) */
};

/* Where the tools would put things (ckpt_check --coord, --ckptdir). */
struct check_places {
	const char *coord;	/* NULL: $CKPT_COORD or the default */
	const char *ckptdir;	/* NULL: $CKPT_DIR or "." */
};

/* check_kernel.c */
void check_kernel_version(struct check *c);
void check_rseq(struct check *c);
void check_clone3_set_tid(struct check *c);
void check_kcmp(struct check *c);
void check_pagemap(struct check *c);
void check_soft_dirty(struct check *c);
void check_ptrace_scope(struct check *c);

/* check_dirty_tracking.c */
void check_userfaultfd(struct check *c);
void check_uffd_wp(struct check *c);
void check_pagemap_scan(struct check *c);
void check_accel(struct check *c);

/* check_cpu.c */
void check_cpu_features(struct check *c);

/* check_places.c */
void check_coordinator(struct check *c, const struct check_places *p);
void check_ckptdir(struct check *c, const struct check_places *p);

#endif /* CKPT_LAUNCH_CHECK_H */
