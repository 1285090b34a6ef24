// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The restart loader, top to bottom. ckpt_restart validated the image,
 * chose a free address range that no image region uses and exec'd us
 * there (restart/loader_exec.c); the kernel gave us a [stack] and a vdso
 * set at random addresses. See docs/restart.md.
 */
#include "loader.h"
#include "../loader_abi.h"

extern char __blob_start[] __attribute__((visibility("hidden")));
extern char __rw_end[] __attribute__((visibility("hidden")));

static void add_own_mapping(struct loader *l, uint64_t start, uint64_t end)
{
	if (l->nown == CKPT_LOADER_MAX_MAPPINGS)
		loader_fail("more than %d loader mappings",
			    CKPT_LOADER_MAX_MAPPINGS);
	l->own[l->nown].start = start;
	l->own[l->nown].end = end;
	l->nown++;
}

/* Our free range: the blob and its parameters, a staging area, the work
 * area up to the end ckpt_restart gave us (restart/loader_abi.h). */
static void locate_self(struct loader *l)
{
	l->self_start = (uint64_t)__blob_start;
	l->self_end = (uint64_t)__rw_end + LOADER_PARAMS_SIZE;
	l->stage_start = l->self_end + LOADER_PAGE;
	l->stage_end = l->stage_start + LOADER_STAGE_SIZE;
	l->work_next = l->stage_end + LOADER_PAGE;
	if (l->work_end <= l->work_next)
		loader_fail("the loader's address range ends at %lx, before its "
			    "work area at %lx", l->work_end, l->work_next);
	add_own_mapping(l, l->self_start, l->self_end);
}

static uint64_t work_map(struct loader *l, uint64_t len, int populate)
{
	uint64_t addr = l->work_next;
	long ret;

	len = page_up(len ? len : 1, l->page_size);
	if (len > l->work_end - addr)
		loader_fail("the loader's work area is too small for %lu bytes",
			    len);
	ret = sys_mmap(addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		       MAP_ANONYMOUS | MAP_FIXED_NOREPLACE |
		       (populate ? MAP_POPULATE : 0), -1, 0);
	if (ret < 0 || (uint64_t)ret != addr)
		loader_fail("allocating %lu bytes at %lx for the loader failed: "
			    "%s", len, addr, ret < 0 ? errno_text(ret) :
			    "address in use");
	l->work_next += len;
	add_own_mapping(l, addr, addr + len);
	return addr;
}

/* Anonymous memory in the work area, never where the image goes. */
uint64_t work_alloc(struct loader *l, uint64_t len)
{
	return work_map(l, len, 0);
}

/* The same, its pages made in one call: for a buffer that is filled
 * whole, where a fault per page would cost more (in a VM above all). */
uint64_t work_alloc_populated(struct loader *l, uint64_t len)
{
	return work_map(l, len, 1);
}

void loader_main(const uint64_t *kernel_sp) __attribute__((noreturn));

void loader_main(const uint64_t *kernel_sp)
{
	static struct loader l;

	parse_kernel_stack(&l, kernel_sp);
	locate_self(&l);
	image_read(&l);
	extent_map_prepare(&l);
	extent_patch_prepare(&l);
	extent_decode_prepare(&l);
	progress_start(&l, l.progress_ms);
	maps_read(&l);
	specials_collect(&l);
	specials_plan(&l);
	args_area_plan(&l);

	/* Point of no return: the kernel's stack goes away. */
	clear_address_space(&l);
	args_area_restore(&l);
	specials_stage(&l);
	map_regions(&l);
	specials_place(&l);
	progress_clear();
	hand_off(&l);
}
