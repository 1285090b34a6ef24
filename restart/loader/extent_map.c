// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Memory mapped straight from the image: MAP_PRIVATE of the image at the
 * extent's file offset, so the program runs after reading only the
 * metadata and its pages come from the page cache. The per-extent half
 * of the rule in docs/restart.md is extent_can_be_mapped(); the
 * image-wide half (--copy, the filesystem, the image's libckpt) was
 * decided by ckpt_restart (restart/memory_mode.c) and arrives as
 * l->map_image.
 */
#include "ckpt/hash.h"
#include "loader.h"

/* Below this an extent is copied: a mapping costs a VMA of the
 * kernel's vm.max_map_count and keeps the image's inode alive; for a
 * few pages the copy is as fast. */
#define MAP_EXTENT_MIN	(256UL << 10)

/*
 * Can this extent be mapped from the image? Only plain private memory:
 * the brk heap keeps brk semantics (and its [heap] name), the main stack
 * grows down, shared memory must stay shared, file mappings and the vdso
 * have their own sources; executable memory is copied because the image
 * may be on a noexec mount. The data must be stored raw (today every
 * extent is; a stored form other than the page image, such as a
 * compressed extent, must answer 0 here).
 */
int extent_can_be_mapped(const struct loader *l, const struct ckpt_region *r,
			 const struct ckpt_extent *e)
{
	if (!l->map_image)
		return 0;
	if (r->kind != CKPT_REGION_ANON &&
	    r->kind != CKPT_REGION_DELETED_PRIVATE)
		return 0;
	if (r->prot & PROT_EXEC)
		return 0;
	if (e->len < MAP_EXTENT_MIN)
		return 0;
	return (e->addr | e->len | e->file_offset) % l->page_size == 0;
}

/*
 * Map e read-only with its pages populated from the page cache (read
 * from disk if they are not there), hash them in place and fail, naming
 * the memory, if they are not what was saved: a restarted program never
 * runs on unverified memory. map_regions() then gives the region its
 * saved protection; a write takes a private copy of the page.
 */
void map_extent(struct loader *l, const struct ckpt_extent *e)
{
	long ret;

	ret = sys_mmap(e->addr, e->len, PROT_READ,
		       MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, l->image_fd,
		       e->file_offset);
	if (ret < 0 || (uint64_t)ret != e->addr)
		loader_fail("memory %lx-%lx: mapping its data at image offset "
			    "%lu failed: %s", e->addr, e->addr + e->len,
			    e->file_offset, ret < 0 ? errno_text(ret) :
			    "mapped elsewhere");
	if (ckpt_hash64((const void *)e->addr, e->len, 0) != e->hash)
		loader_fail("memory %lx-%lx: checksum mismatch: the saved data "
			    "is corrupt", e->addr, e->addr + e->len);
	if (!l->image_mapped_at)
		l->image_mapped_at = e->addr;
}
