// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Map every saved region at exactly its address, fill it from the image,
 * check each extent's hash, then give the region its saved protection.
 * MAP_FIXED_NOREPLACE turns any collision into a reported error instead
 * of silently replacing what is there.
 */
#include "ckpt/hash.h"
#include "loader.h"

#define READ_CHUNK	(64UL << 20)

static const char *region_name(const struct loader *l,
			       const struct ckpt_region *r)
{
	const char *name = image_string(l, r->name);

	return *name ? name : "anonymous";
}

static void fail_region(const struct loader *l, const struct ckpt_region *r,
			const char *what, long err)
{
	loader_fail("region %lx-%lx (%s): %s: %s", r->start, r->end,
		    region_name(l, r), what,
		    err == -17 ? "the address is already in use"
			       : errno_text(err));
}

/* A mapped file must be the one that was checkpointed: a shorter file
 * would turn our writes into SIGBUS. */
static void check_region_file(const struct loader *l,
			      const struct ckpt_region *r, int fd)
{
	struct statx stx;
	uint64_t mtime;
	long err;

	err = sys_statx_fd(fd, &stx);
	if (err)
		fail_region(l, r, "stat of the mapped file failed", err);
	mtime = (uint64_t)stx.stx_mtime.tv_sec * 1000000000ULL +
		stx.stx_mtime.tv_nsec;
	if (r->kind == CKPT_REGION_FILE_SHARED && (r->prot & PROT_WRITE))
		mtime = r->file_mtime_ns;	/* live data: only the size */
	if (stx.stx_size != r->file_size || mtime != r->file_mtime_ns)
		loader_fail("region %lx-%lx (%s): the mapped file changed "
			    "since the checkpoint (size %lu, was %lu)",
			    r->start, r->end, region_name(l, r),
			    (uint64_t)stx.stx_size, r->file_size);
}

static int open_region_file(const struct loader *l,
			    const struct ckpt_region *r)
{
	int writable = r->kind == CKPT_REGION_FILE_SHARED &&
		       (r->prot & PROT_WRITE);
	long fd;

	fd = sys_openat(AT_FDCWD, image_string(l, r->name),
			(writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		fail_region(l, r, "opening the mapped file failed", fd);
	check_region_file(l, r, (int)fd);
	return (int)fd;
}

static int mmap_flags(const struct ckpt_region *r)
{
	int flags = MAP_FIXED_NOREPLACE;

	if (r->kind == CKPT_REGION_ANON_SHARED ||
	    r->kind == CKPT_REGION_FILE_SHARED)
		flags |= MAP_SHARED;
	else
		flags |= MAP_PRIVATE;
	if (r->kind != CKPT_REGION_FILE_PRIVATE &&
	    r->kind != CKPT_REGION_FILE_SHARED)
		flags |= MAP_ANONYMOUS;
	/* GROWSDOWN is only noted: a fixed-size stack is what was saved. */
	if (r->flags & CKPT_REGION_F_NORESERVE)
		flags |= MAP_NORESERVE;
	return flags;
}

/*
 * The heap is grown with brk() when ckpt_restart placed the kernel's
 * program break exactly at its saved start (restart/loader_exec.c): the
 * restored program's break is then the kernel's again, and malloc goes on
 * growing the same heap. Returns 1 when done that way.
 */
static int map_heap_by_brk(const struct loader *l, const struct ckpt_region *r)
{
	const struct ckpt_image_header *h = &l->hdr;
	long ret;

	if (r->kind != CKPT_REGION_HEAP || !(h->flags & CKPT_IMG_F_HAS_BRK) ||
	    r->start != h->brk_start || h->brk_end < r->start ||
	    page_up(h->brk_end, l->page_size) != r->end ||
	    (uint64_t)sys_brk(0) != h->brk_start)
		return 0;
	ret = sys_brk(h->brk_end);
	if ((uint64_t)ret != h->brk_end)
		fail_region(l, r, "growing the program break to its saved end "
			    "failed", -12);
	return 1;
}

/* The bytes of r that will be copied in (the rest of its saved data is
 * mapped from the image, extent_map.c). */
static uint64_t copied_bytes(const struct loader *l,
			     const struct ckpt_region *r)
{
	const struct ckpt_extent *e;
	uint64_t n = 0, last;
	int mapped;

	if (r->first_extent > l->hdr.nextents ||
	    r->nextents > l->hdr.nextents - r->first_extent)
		return 0;
	e = &l->extents[r->first_extent];
	for (uint64_t i = 0; i < r->nextents; i = last + 1) {
		mapped = extent_span(l, r, e, r->nextents, i, &last);
		for (uint64_t k = i; k <= last; k++)
			if (!mapped || e[k].source != l->map_source)
				n += e[k].len;
	}
	return n;
}

/* Writable while we fill it; a region without data gets its final
 * protection at once (a read-only shared file cannot be mapped writable). */
static void map_region(const struct loader *l, const struct ckpt_region *r)
{
	int prot = r->nextents ? PROT_READ | PROT_WRITE : (int)r->prot;
	int flags = mmap_flags(r), fd = -1;
	uint64_t len = r->end - r->start;
	long ret;

	if (map_heap_by_brk(l, r))
		return;
	/* Mostly copied anonymous memory: fault it all in with one call
	 * rather than one fault per page while the data is read in. */
	if ((flags & MAP_ANONYMOUS) && !(flags & MAP_SHARED) &&
	    copied_bytes(l, r) * 2 >= len)
		flags |= MAP_POPULATE;

	if (!(flags & MAP_ANONYMOUS))
		fd = open_region_file(l, r);
	ret = sys_mmap(r->start, len, prot, flags, fd,
		       fd < 0 ? 0 : r->file_offset);
	if (fd >= 0)
		sys_close(fd);
	if (ret >= 0 && (uint64_t)ret != r->start) {	/* no NOREPLACE */
		sys_munmap(ret, len);
		ret = -17;
	}
	if (ret < 0)
		fail_region(l, r, "mapping at the saved address failed", ret);
}

/* One extent's data into dst (its saved address or a buffer), hash
 * checked. */
void read_extent(const struct loader *l, const struct ckpt_extent *e,
			unsigned char *dst)
{
	uint64_t done = 0, n;
	long got;

	while (done < e->len) {
		n = e->len - done < READ_CHUNK ? e->len - done : READ_CHUNK;
		got = sys_pread(extent_source_fd(l, e), dst + done, n,
				e->file_offset + done);
		if (got == -4)	/* EINTR */
			continue;
		if (got <= 0)
			loader_fail("memory %lx-%lx: reading its data at image "
				    "offset %lu%s failed: %s", e->addr,
				    e->addr + e->len, e->file_offset + done,
				    extent_source_name(l, e),
				    got ? errno_text(got) : "image truncated");
		done += got;
	}
	if (ckpt_extent_hash(e, dst) != e->hash)
		loader_fail("memory %lx-%lx: checksum mismatch: the saved data%s "
			    "is corrupt", e->addr, e->addr + e->len,
			    extent_source_name(l, e));
	progress_add(e->len);
}

/* The extents of r, checked to lie inside it; NULL if the table is out
 * of bounds. */
static const struct ckpt_extent *region_extents(const struct loader *l,
						const struct ckpt_region *r)
{
	const struct ckpt_extent *e;
	uint64_t i;

	if (r->first_extent > l->hdr.nextents ||
	    r->nextents > l->hdr.nextents - r->first_extent)
		loader_fail("region %lx-%lx: extent table out of bounds",
			    r->start, r->end);
	for (i = 0; i < r->nextents; i++) {
		e = &l->extents[r->first_extent + i];
		if (e->addr < r->start || e->len > r->end - e->addr)
			loader_fail("memory %lx-%lx lies outside its region "
				    "%lx-%lx", e->addr, e->addr + e->len,
				    r->start, r->end);
	}
	return &l->extents[r->first_extent];
}

/* One extent into dst: read, or queued for decompression (extent_decode.c;
 * extent_decode_wait() finishes the queue). */
static void read_or_queue_extent(const struct loader *l,
				 const struct ckpt_extent *e,
				 unsigned char *dst)
{
	if (e->encoding != CKPT_EXTENT_RAW && e->source)
		loader_fail("memory %lx-%lx: compressed data in a chain link",
			    e->addr, e->addr + e->len);
	if (e->encoding != CKPT_EXTENT_RAW)
		extent_decode_queue(l, e, dst);
	else
		read_extent(l, e, dst);
}

/* The region's saved pages into dst, which stands for r->start: the
 * region itself, or a buffer of its size (the old vdso, vdso.c). */
void region_read_data(const struct loader *l, const struct ckpt_region *r,
		      unsigned char *dst)
{
	const struct ckpt_extent *e = region_extents(l, r);

	for (uint64_t i = 0; i < r->nextents; i++)
		read_or_queue_extent(l, &e[i], dst + (e[i].addr - r->start));
	extent_decode_wait(l);	/* the compressed ones, in parallel */
}

/* The region's saved pages at their addresses: mapped from the image
 * where the rule allows (extent_map.c) and verified while the pages
 * deltas changed are put over the mappings (extent_patch.c), then the
 * rest read in or decompressed, over the mappings where a span covers
 * them. */
static void region_fill(struct loader *l, const struct ckpt_region *r)
{
	const struct ckpt_extent *e = region_extents(l, r);
	uint64_t n = r->nextents, last;
	int mapped;

	for (uint64_t i = 0; i < n; i = last + 1)
		if (extent_span(l, r, e, n, i, &last))
			map_span(l, e, i, last);
	patch_region_start(l, r);
	for (uint64_t i = 0; i < n; i = last + 1)
		if (extent_span(l, r, e, n, i, &last))
			verify_span(l, e, i, last);
	patch_region_finish();
	for (uint64_t i = 0; i < n; i = last + 1) {
		mapped = extent_span(l, r, e, n, i, &last);
		for (uint64_t k = i; k <= last; k++) {
			if (mapped && (e[k].source == l->map_source ||
				       extent_patchable(l, &e[k])))
				continue;
			/* over a mapping: its private copies made in one
			 * call, not one page fault each (costly in a VM);
			 * a kernel before 5.14 faults them in as usual */
			if (mapped)
				sys_madvise(e[k].addr, e[k].len,
					    MADV_POPULATE_WRITE);
			read_or_queue_extent(l, &e[k], (unsigned char *)
					     e[k].addr);
		}
	}
	extent_decode_wait(l);	/* the compressed ones, in parallel */
}

void map_regions(struct loader *l)
{
	const struct ckpt_region *r;
	long err;
	unsigned i;

	for (i = 0; i < l->hdr.nregions; i++) {
		r = &l->regions[i];
		if (region_is_special(r))
			continue;
		map_region(l, r);
		if (!r->nextents)
			continue;
		region_fill(l, r);
		err = sys_mprotect(r->start, r->end - r->start, r->prot);
		if (err)
			fail_region(l, r, "setting its protection failed", err);
	}
}
