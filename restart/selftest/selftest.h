/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loader self-test: mkimage writes an image of a tiny freestanding
 * "restored program" (restored.c) without libckpt; restarting it proves the
 * address-space rebuild on its own. Both sides share this layout.
 */
#ifndef CKPT_SELFTEST_H
#define CKPT_SELFTEST_H

#include <stdint.h>

#define ST_CODE_ADDR		0x5a5a00000000ULL	/* restored.bin */
#define ST_PARAMS_ADDR		0x5a5a10000000ULL	/* heap: params */
#define ST_FILE_PRIV_ADDR	0x5a5a20000000ULL	/* 2 pages @4096 */
#define ST_FILE_SHARED_ADDR	0x5a5a20100000ULL	/* 3 pages @0, r-- */
#define ST_ANON_SHARED_ADDR	0x5a5a30000000ULL	/* 2 pages */
#define ST_DELETED_ADDR		0x5a5a30100000ULL	/* 1 page, r-- */
#define ST_SPARSE_ADDR		0x5a5a40000000ULL	/* 1 GiB, 2 extents */
#define ST_SPARSE_SIZE		(1ULL << 30)
#define ST_GUARD_ADDR		0x5a5a90000000ULL	/* ---, 1 page */
#define ST_STACK_ADDR		0x5a5a90001000ULL	/* 64 KiB stack */
#define ST_STACK_SIZE		0x10000ULL
/* With --cover-top: sparse regions over the top TiB of user space, where
 * the kernel puts the loader's stack and usually its vdso. */
#define ST_COVER_START		0x7f0000000000ULL
#define ST_COVER_END		0x7ffffffff000ULL

/* With --old-vdso: another kernel's special mappings (3 + 1 data pages,
 * a 2-page vdso crafted by mkimage, linked at ST_OLD_VDSO_VADDR). */
#define ST_OLD_VVAR_ADDR	0x5a5aa0000000ULL
#define ST_OLD_VCLOCK_ADDR	0x5a5aa0003000ULL
#define ST_OLD_VDSO_ADDR	0x5a5aa0004000ULL
#define ST_OLD_VDSO_SIZE	0x2000ULL
#define ST_OLD_VDSO_VADDR	0xffffffffff700000ULL

#define ST_PARAMS_MAGIC		0x5453544c4553ULL
#define ST_MAX_CHECKS		16

/* Memory the restored program hashes and compares. */
struct st_check {
	uint64_t addr;
	uint64_t len;
	uint64_t hash;			/* ckpt_hash64(seed 0) expected */
};

struct st_params {
	uint64_t magic;
	int32_t exit_code;
	uint32_t nchecks;
	uint64_t tls;			/* expected fs base */
	uint64_t vdso;			/* [vdso] address, 0 = none */
	uint64_t brk_end;		/* saved program break */
	uint64_t xcr0;			/* expected args.current_xcr0 */
	uint32_t vdso_bogus;		/* the vdso has __vdso_bogus: -ENOSYS */
	uint32_t reserved;
	uint64_t vvar_zero[2];		/* old data pages: zero pages, or 0 */
	struct st_check checks[ST_MAX_CHECKS];
	char message[128];		/* printed on success */
};

#endif /* CKPT_SELFTEST_H */
