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
#include "../loader_abi.h"

/* Below this an extent is copied: a mapping costs a VMA of the
 * kernel's vm.max_map_count and keeps the image's inode alive; for a
 * few pages the copy is as fast. */
#define MAP_EXTENT_MIN	(256UL << 10)

/*
 * Can this extent be mapped from the image? Only plain private memory:
 * the brk heap keeps brk semantics (and its [heap] name), the main stack
 * grows down, shared memory must stay shared, file mappings and the vdso
 * have their own sources; executable memory is copied because the image
 * may be on a noexec mount. The data must be stored raw: a compressed
 * extent is decompressed (extent_decode.c).
 */
int extent_mappable_kind(const struct loader *l, const struct ckpt_region *r,
			 const struct ckpt_extent *e)
{
	if (!l->map_image || e->encoding != CKPT_EXTENT_RAW)
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

/* ... and from the one file memory is mapped from (chain.c). */
int extent_can_be_mapped(const struct loader *l, const struct ckpt_region *r,
			 const struct ckpt_extent *e)
{
	return e->source == l->map_source && extent_mappable_kind(l, r, e);
}

/* The buffer extents are verified in, from the work area that
 * ckpt_restart sized for it; without room, extents are hashed where they
 * are mapped instead. */
void extent_map_prepare(struct loader *l)
{
	chain_choose_map_source(l);
	if (l->map_image &&
	    l->work_end - l->work_next >= LOADER_VERIFY_BUF + l->page_size)
		l->verify_buf = (unsigned char *)work_alloc(l,
							  LOADER_VERIFY_BUF);
}

/* Hash e where it is mapped, its pages brought in read-only from the
 * page cache: for an extent larger than the verify buffer. */
static void verify_in_place(const struct loader *l,
			    const struct ckpt_extent *e)
{
	if (ckpt_hash64((const void *)e->addr, e->len, 0) != e->hash)
		loader_fail("memory %lx-%lx: checksum mismatch: the saved data%s "
			    "is corrupt", e->addr, e->addr + e->len,
			    extent_source_name(l, e));
}

/*
 * Verify e, then map it read-only at its address (map_regions() then
 * gives the region its protection; a write takes a private copy of the
 * page). The data is read once through the verify buffer, as fast as
 * cat reads it, and hashed there: no instruction of the program runs on
 * unverified memory, and the pages are in the page cache for the
 * mapping. The mapping itself costs no reads; the program's first
 * touches fault the pages in.
 */
void map_extent(struct loader *l, const struct ckpt_extent *e)
{
	int in_buffer = l->verify_buf && e->len <= LOADER_VERIFY_BUF;
	long ret;

	if (in_buffer)
		read_extent(l, e, l->verify_buf);
	ret = sys_mmap(e->addr, e->len, PROT_READ, MAP_PRIVATE | MAP_FIXED |
		       (in_buffer ? 0 : MAP_POPULATE), extent_source_fd(l, e),
		       e->file_offset);
	if (ret < 0 || (uint64_t)ret != e->addr)
		loader_fail("memory %lx-%lx: mapping its data at image offset "
			    "%lu%s failed: %s", e->addr, e->addr + e->len,
			    e->file_offset, extent_source_name(l, e),
			    ret < 0 ? errno_text(ret) :
			    "mapped elsewhere");
	if (!in_buffer)
		verify_in_place(l, e);
	if (!l->image_mapped_at)
		l->image_mapped_at = e->addr;
}
