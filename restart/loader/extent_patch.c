// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pages the deltas of a chain changed, put over the spans mapped from
 * the chain's full image (extent_map.c). They are scattered (a delta
 * holds whatever pages the program wrote, one or a few at a time), so
 * each would cost a mapping of its own (a VMA each: tens of thousands of
 * them) or, copied one by one, two system calls and a page fault. Here
 * the extents of one link that lie close together in its file are read
 * with one pread into a buffer, each hashed there, then written to their
 * addresses with one process_vm_writev() per batch: the kernel makes the
 * private copies without a fault per page. Where that call is refused (a
 * seccomp filter, a kernel without it), they are copied.
 *
 * A region's patches are put in by a thread of the loader's own while
 * the loader's thread verifies the spans' data in the full image (the
 * two read different files into different buffers; the patches land
 * in pages the verification does not read), so on two cores a chain's
 * restart costs little more than the full image's. Without room in the
 * work area for its buffer and stack, or when the thread cannot start,
 * the loader puts them in itself after the verification.
 */
#include "ckpt/hash.h"
#include "loader.h"
#include "../loader_abi.h"

#define PATCH_BATCH	256		/* extents per process_vm_writev */
#define PATCH_GAP_MAX	(64UL << 10)	/* bytes of a link's file read
					   between two extents of a batch */

struct patch_iovec {
	uint64_t base;
	uint64_t len;
};

struct patch_batch {
	uint64_t win, end;		/* file range read into the buffer */
	unsigned n;
	const struct ckpt_extent *e[PATCH_BATCH];
};

enum patch_failure {
	PATCH_OK,
	PATCH_READ,		/* err: -errno, 0 = image truncated */
	PATCH_CHECKSUM,
};

/* The one patcher: a region's patches at a time, by its thread or by the
 * loader's own. Failures are kept and reported by the loader's thread. */
static struct {
	const struct loader *l;
	const struct ckpt_region *r;
	unsigned char *buf;		/* buf_size bytes */
	uint64_t buf_size;
	struct loader_thread thread;	/* stack_top 0: no thread */
	int pending;			/* this region has patches */
	int threaded;			/* put in by the thread */
	int vm_writev_refused;
	uint64_t bytes;			/* put in, for the progress line */
	enum patch_failure why;
	const struct ckpt_extent *failed;
	uint64_t failed_off;
	long err;
	struct patch_iovec local[PATCH_BATCH], remote[PATCH_BATCH];
} pat;

/* Batched here: raw data of a file other than the mapped one. */
static int patchable(const struct loader *l, const struct ckpt_extent *e)
{
	return e->source != l->map_source && e->source <= l->nlinks &&
	       e->encoding == CKPT_EXTENT_RAW && e->len <= pat.buf_size;
}

static int fits(const struct patch_batch *b, const struct ckpt_extent *e)
{
	return b->n < PATCH_BATCH && e->file_offset >= b->end &&
	       e->file_offset - b->end <= PATCH_GAP_MAX &&
	       e->file_offset + e->len - b->win <= pat.buf_size;
}

static void fail_patch(enum patch_failure why, const struct ckpt_extent *e,
		       uint64_t off, long err)
{
	pat.why = why;
	pat.failed = e;
	pat.failed_off = off;
	pat.err = err;
}

static int read_batch(const struct patch_batch *b)
{
	int fd = extent_source_fd(pat.l, b->e[0]);
	uint64_t len = b->end - b->win, done = 0;
	long got;

	while (done < len) {
		got = sys_pread(fd, pat.buf + done, len - done, b->win + done);
		if (got == -4)	/* EINTR */
			continue;
		if (got <= 0) {
			fail_patch(PATCH_READ, b->e[0], b->win + done, got);
			return -1;
		}
		done += got;
	}
	return 0;
}

/* Each extent's data where the batch's read put it, hash checked. */
static int check_batch(const struct patch_batch *b)
{
	for (unsigned i = 0; i < b->n; i++) {
		const struct ckpt_extent *e = b->e[i];

		pat.local[i].base = (uint64_t)(pat.buf +
					       (e->file_offset - b->win));
		pat.local[i].len = e->len;
		pat.remote[i].base = e->addr;
		pat.remote[i].len = e->len;
		if (ckpt_extent_hash(e, (const void *)pat.local[i].base) !=
		    e->hash) {
			fail_patch(PATCH_CHECKSUM, e, 0, 0);
			return -1;
		}
	}
	return 0;
}

/* 1 when the kernel wrote every byte; 0 to copy them instead. */
static int write_by_kernel(const struct patch_batch *b, uint64_t bytes)
{
	long pid, got;

	if (pat.vm_writev_refused)
		return 0;
	pid = sys_getpid();
	got = sys_process_vm_writev(pid, pat.local, b->n, pat.remote, b->n);
	if (got == (long)bytes)
		return 1;
	pat.vm_writev_refused = 1;	/* a partial write is redone by the
					   copy */
	return 0;
}

static int write_batch(struct patch_batch *b)
{
	uint64_t bytes = 0;

	if (!b->n)
		return 0;
	if (read_batch(b) || check_batch(b))
		return -1;
	for (unsigned i = 0; i < b->n; i++)
		bytes += b->e[i]->len;
	if (!write_by_kernel(b, bytes))
		for (unsigned i = 0; i < b->n; i++)
			memcpy((void *)pat.remote[i].base,
			       (const void *)pat.local[i].base,
			       pat.remote[i].len);
	pat.bytes += bytes;
	b->n = 0;
	return 0;
}

/* The extents of link (or image) `source` in e[first..last], in file
 * order as they are in address order (a delta writes them so; one that
 * goes back starts a new batch). */
static int patch_from(const struct ckpt_extent *e, uint64_t first,
		      uint64_t last, unsigned source)
{
	struct patch_batch b = { 0 };

	for (uint64_t k = first; k <= last; k++) {
		if (e[k].source != source || !patchable(pat.l, &e[k]))
			continue;
		if (b.n && !fits(&b, &e[k]) && write_batch(&b))
			return -1;
		if (!b.n)
			b.win = e[k].file_offset;
		b.e[b.n++] = &e[k];
		b.end = e[k].file_offset + e[k].len;
	}
	return write_batch(&b);
}

/* Every mapped span of the region: its extents that are not the map
 * source's, batched by the file they lie in. Stops at the first
 * failure. */
static void patch_region(void *unused)
{
	const struct loader *l = pat.l;
	const struct ckpt_extent *e = &l->extents[pat.r->first_extent];
	uint64_t n = pat.r->nextents, last;

	(void)unused;
	for (uint64_t i = 0; i < n; i = last + 1) {
		if (!extent_span(l, pat.r, e, n, i, &last))
			continue;
		for (unsigned s = 0; s <= l->nlinks; s++)
			if (s != l->map_source && patch_from(e, i, last, s))
				return;
	}
}

/* The bytes of the image's extents that lie in another file than the
 * map source: at most what the patcher puts in. */
static uint64_t bytes_outside_map_source(const struct loader *l)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < l->hdr.nextents; i++)
		if (l->extents[i].source != l->map_source)
			n += l->extents[i].len;
	return n;
}

/* Before the point of no return: the patcher's buffer and stack from the
 * work area (ckpt_restart made it LOADER_PATCH_WORK larger for a chain;
 * the buffer made in one call when it will be filled whole), else it
 * shares the verify buffer and runs after the verification. */
void extent_patch_prepare(struct loader *l)
{
	pat.l = l;
	pat.buf = l->verify_buf;
	pat.buf_size = LOADER_VERIFY_BUF;
	if (!l->verify_buf || !l->nlinks ||
	    l->work_end - l->work_next < LOADER_PATCH_WORK + l->page_size)
		return;
	pat.buf = (unsigned char *)
		(bytes_outside_map_source(l) >= LOADER_PATCH_BUF ?
		 work_alloc_populated(l, LOADER_PATCH_BUF) :
		 work_alloc(l, LOADER_PATCH_BUF));
	pat.buf_size = LOADER_PATCH_BUF;
	pat.thread.stack_top = (unsigned char *)
		work_alloc(l, LOADER_PATCH_STACK) + LOADER_PATCH_STACK;
}

/* 1 if a mapped span of r holds an extent to put in here. */
static int region_has_patches(const struct loader *l,
			      const struct ckpt_region *r)
{
	const struct ckpt_extent *e = &l->extents[r->first_extent];
	uint64_t n = r->nextents, last;

	for (uint64_t i = 0; i < n; i = last + 1) {
		if (!extent_span(l, r, e, n, i, &last))
			continue;
		for (uint64_t k = i; k <= last; k++)
			if (patchable(l, &e[k]))
				return 1;
	}
	return 0;
}

/* The region's spans are mapped: put its patches in, in the patcher's
 * thread where there is one (patch_region_finish() waits for it). */
void patch_region_start(const struct loader *l, const struct ckpt_region *r)
{
	pat.r = r;
	pat.bytes = 0;
	pat.pending = l->verify_buf && l->nlinks && region_has_patches(l, r);
	pat.threaded = pat.pending && pat.thread.stack_top &&
		       loader_thread_start(&pat.thread, patch_region, NULL);
}

static void report_patch_failure(void)
{
	const struct ckpt_extent *e = pat.failed;

	if (pat.why == PATCH_READ)
		loader_fail("memory from %lx: reading its data at image offset "
			    "%lu%s failed: %s", e->addr, pat.failed_off,
			    extent_source_name(pat.l, e),
			    pat.err ? errno_text(pat.err) : "image truncated");
	loader_fail("memory %lx-%lx: checksum mismatch: the saved data%s is "
		    "corrupt", e->addr, e->addr + e->len,
		    extent_source_name(pat.l, e));
}

/* The region's patches are in (or put in now, by the loader's thread),
 * every one checked; a failure is reported here. */
void patch_region_finish(void)
{
	if (!pat.pending)
		return;
	if (pat.threaded)
		loader_thread_join(&pat.thread, "the thread putting in the "
				   "pages of the chain's deltas");
	else
		patch_region(NULL);
	if (pat.why != PATCH_OK)
		report_patch_failure();
	progress_add(pat.bytes);
}

int extent_patchable(const struct loader *l, const struct ckpt_extent *e)
{
	return l->verify_buf && patchable(l, e);
}
