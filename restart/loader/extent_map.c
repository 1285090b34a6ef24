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

/* Below this a span is copied: a mapping costs a VMA of the kernel's
 * vm.max_map_count and keeps the image's inode alive; for a few pages
 * the copy is as fast. */
#define MAP_SPAN_MIN	(256UL << 10)

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
	return (e->addr | e->len | e->file_offset) % l->page_size == 0;
}

static int in_span(const struct loader *l, const struct ckpt_region *r,
		   const struct ckpt_extent *first, const struct ckpt_extent *e)
{
	return e->source == l->map_source && extent_mappable_kind(l, r, e) &&
	       e->file_offset - first->file_offset == e->addr - first->addr;
}

/*
 * The span of extents e[i..*last] that one mapping of the map source
 * (chain.c) covers: the memory holds no hole from e[i] to e[*last], and
 * the map source's extents among them lie in its file as in memory.
 * Extents of other files between them (the pages a delta changed) are
 * copied over the mapping afterwards. 1 if the span is mapped (at least
 * MAP_SPAN_MIN bytes), else its extents are copied.
 */
int extent_span(const struct loader *l, const struct ckpt_region *r,
		const struct ckpt_extent *e, uint64_t n, uint64_t i,
		uint64_t *last)
{
	*last = i;
	if (!in_span(l, r, &e[i], &e[i]))
		return 0;
	for (uint64_t k = i + 1; k < n; k++) {
		if (e[k].addr != e[k - 1].addr + e[k - 1].len)
			break;
		if (e[k].source != l->map_source)
			continue;
		if (!in_span(l, r, &e[i], &e[k]))
			break;
		*last = k;
	}
	return e[*last].addr + e[*last].len - e[i].addr >= MAP_SPAN_MIN;
}

/* The buffer extents are verified in, from the work area that
 * ckpt_restart sized for it; without room, extents are hashed where they
 * are mapped instead. */
void extent_map_prepare(struct loader *l)
{
	chain_choose_map_source(l);
	if (l->map_image &&
	    l->work_end - l->work_next >= LOADER_VERIFY_BUF + l->page_size)
		/* filled whole when there is that much to verify */
		l->verify_buf = (unsigned char *)
			(l->map_source_bytes >= LOADER_VERIFY_BUF ?
			 work_alloc_populated(l, LOADER_VERIFY_BUF) :
			 work_alloc(l, LOADER_VERIFY_BUF));
}

/* Hash e where it is mapped, its pages brought in read-only from the
 * page cache: for an extent larger than the verify buffer. */
static void verify_in_place(const struct loader *l,
			    const struct ckpt_extent *e)
{
	if (ckpt_extent_hash(e, (const void *)e->addr) != e->hash)
		loader_fail("memory %lx-%lx: checksum mismatch: the saved data%s "
			    "is corrupt", e->addr, e->addr + e->len,
			    extent_source_name(l, e));
}

static int in_verify_buf(const struct loader *l, const struct ckpt_extent *e)
{
	return l->verify_buf && e->len <= LOADER_VERIFY_BUF;
}

/* len bytes at file offset off of the span's file into the verify
 * buffer. */
static void read_window(const struct loader *l, const struct ckpt_extent *e,
			uint64_t len, uint64_t off)
{
	int fd = extent_source_fd(l, e);
	uint64_t done = 0;
	long got;

	while (done < len) {
		got = sys_pread(fd, l->verify_buf + done, len - done,
				off + done);
		if (got == -4)	/* EINTR */
			continue;
		if (got <= 0)
			loader_fail("memory from %lx: reading its data at image "
				    "offset %lu%s failed: %s", e->addr,
				    off + done, extent_source_name(l, e),
				    got ? errno_text(got) : "image truncated");
		done += got;
	}
}

/* The map source's extents of the span e[first..last] (mapped by
 * map_span()), hashed in the verify buffer, read in windows of its size
 * (a delta splits the full image's memory into many extents: one read
 * each would cost a system call per few pages). An extent larger than the
 * buffer was hashed where it is mapped. The data is read once, as fast as
 * cat reads it: no instruction of the program runs on unverified memory,
 * and the pages are in the page cache for the mapping. */
void verify_span(const struct loader *l, const struct ckpt_extent *e,
		 uint64_t first, uint64_t last)
{
	uint64_t end = e[last].file_offset + e[last].len, win = 0, wlen = 0;

	for (uint64_t k = first; k <= last; k++) {
		const struct ckpt_extent *x = &e[k];

		if (x->source != l->map_source || !in_verify_buf(l, x))
			continue;
		if (!wlen || x->file_offset + x->len > win + wlen) {
			win = x->file_offset;
			wlen = end - win < LOADER_VERIFY_BUF ? end - win :
							      LOADER_VERIFY_BUF;
			read_window(l, x, wlen, win);
		}
		if (ckpt_extent_hash(x, l->verify_buf +
				     (x->file_offset - win)) != x->hash)
			loader_fail("memory %lx-%lx: checksum mismatch: the "
				    "saved data%s is corrupt", x->addr,
				    x->addr + x->len, extent_source_name(l, x));
	}
}

/* 1 if an extent of the map source in the span is hashed where it is
 * mapped (larger than the verify buffer, or no buffer). */
static int span_verified_in_place(const struct loader *l,
				  const struct ckpt_extent *e, uint64_t first,
				  uint64_t last)
{
	for (uint64_t k = first; k <= last; k++)
		if (e[k].source == l->map_source && !in_verify_buf(l, &e[k]))
			return 1;
	return 0;
}

/*
 * Map the span e[first..last] private and writable at its address
 * (map_regions() then gives the region its protection; a write takes a
 * private copy of the page). The mapping itself costs no reads; the
 * program's first touches fault the pages in. Its map source's extents
 * are verified by verify_span() (those larger than the verify buffer
 * here, populated and hashed where they are mapped); the other extents
 * of the span are put over it by the caller (extent_patch.c), each
 * checked too.
 */
void map_span(struct loader *l, const struct ckpt_extent *e, uint64_t first,
	      uint64_t last)
{
	uint64_t addr = e[first].addr, len = e[last].addr + e[last].len - addr;
	int populate = span_verified_in_place(l, e, first, last);
	long ret;

	ret = sys_mmap(addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		       MAP_FIXED | (populate ? MAP_POPULATE : 0),
		       extent_source_fd(l, &e[first]), e[first].file_offset);
	if (ret < 0 || (uint64_t)ret != addr)
		loader_fail("memory %lx-%lx: mapping its data at image offset "
			    "%lu%s failed: %s", addr, addr + len,
			    e[first].file_offset, extent_source_name(l, &e[first]),
			    ret < 0 ? errno_text(ret) : "mapped elsewhere");
	for (uint64_t k = first; k <= last && populate; k++)
		if (e[k].source == l->map_source && !in_verify_buf(l, &e[k]))
			verify_in_place(l, &e[k]);
	if (!l->image_mapped_at)
		l->image_mapped_at = addr;
	progress_add(len);
}
