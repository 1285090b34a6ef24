// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pages the deltas of a chain changed, put over a span mapped from
 * the chain's full image (extent_map.c). They are scattered (a delta
 * holds whatever pages the program wrote, one or a few at a time), so
 * each would cost a mapping of its own (a VMA each: tens of thousands of
 * them) or, copied one by one, two system calls and a page fault. Here
 * the extents of one link that lie close together in its file are read
 * with one pread into the verify buffer, each hashed there, then written
 * to their addresses with one process_vm_writev() per batch: the kernel
 * makes the private copies without a fault per page. Where that call is
 * refused (a seccomp filter, a kernel without it), they are copied.
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
	uint64_t win, end;		/* file range read into verify_buf */
	unsigned n;
	const struct ckpt_extent *e[PATCH_BATCH];
};

static struct patch_iovec local_iov[PATCH_BATCH], remote_iov[PATCH_BATCH];
static int vm_writev_refused;

/* Batched here: raw data of a file other than the mapped one. */
static int patchable(const struct loader *l, const struct ckpt_extent *e)
{
	return e->source != l->map_source && e->source <= l->nlinks &&
	       e->encoding == CKPT_EXTENT_RAW && e->len <= LOADER_VERIFY_BUF;
}

static int fits(const struct patch_batch *b, const struct ckpt_extent *e)
{
	return b->n < PATCH_BATCH && e->file_offset >= b->end &&
	       e->file_offset - b->end <= PATCH_GAP_MAX &&
	       e->file_offset + e->len - b->win <= LOADER_VERIFY_BUF;
}

static void read_batch(const struct loader *l, const struct patch_batch *b)
{
	int fd = extent_source_fd(l, b->e[0]);
	uint64_t len = b->end - b->win, done = 0;
	long got;

	while (done < len) {
		got = sys_pread(fd, l->verify_buf + done, len - done,
				b->win + done);
		if (got == -4)	/* EINTR */
			continue;
		if (got <= 0)
			loader_fail("memory from %lx: reading its data at image "
				    "offset %lu%s failed: %s", b->e[0]->addr,
				    b->win + done, extent_source_name(l, b->e[0]),
				    got ? errno_text(got) : "image truncated");
		done += got;
	}
}

/* Each extent's data where the batch's read put it, hash checked. */
static void check_batch(const struct loader *l, const struct patch_batch *b)
{
	for (unsigned i = 0; i < b->n; i++) {
		const struct ckpt_extent *e = b->e[i];

		local_iov[i].base = (uint64_t)(l->verify_buf +
					       (e->file_offset - b->win));
		local_iov[i].len = e->len;
		remote_iov[i].base = e->addr;
		remote_iov[i].len = e->len;
		if (ckpt_extent_hash(e, (const void *)local_iov[i].base) !=
		    e->hash)
			loader_fail("memory %lx-%lx: checksum mismatch: the "
				    "saved data%s is corrupt", e->addr,
				    e->addr + e->len, extent_source_name(l, e));
	}
}

/* 1 when the kernel wrote every byte; 0 to copy them instead. */
static int write_by_kernel(const struct patch_batch *b, uint64_t bytes)
{
	long pid, got;

	if (vm_writev_refused)
		return 0;
	pid = sys_getpid();
	got = sys_process_vm_writev(pid, local_iov, b->n, remote_iov, b->n);
	if (got == (long)bytes)
		return 1;
	vm_writev_refused = 1;	/* a partial write is redone by the copy */
	return 0;
}

static void write_batch(const struct loader *l, struct patch_batch *b)
{
	uint64_t bytes = 0;

	if (!b->n)
		return;
	read_batch(l, b);
	check_batch(l, b);
	for (unsigned i = 0; i < b->n; i++)
		bytes += b->e[i]->len;
	if (!write_by_kernel(b, bytes))
		for (unsigned i = 0; i < b->n; i++)
			memcpy((void *)remote_iov[i].base,
			       (const void *)local_iov[i].base,
			       remote_iov[i].len);
	progress_add(bytes);
	b->n = 0;
}

/* The extents of link (or image) `source` in e[first..last], in file
 * order as they are in address order (a delta writes them so; one that
 * goes back starts a new batch). */
static void patch_from(const struct loader *l, const struct ckpt_extent *e,
		       uint64_t first, uint64_t last, unsigned source)
{
	struct patch_batch b = { 0 };

	for (uint64_t k = first; k <= last; k++) {
		if (e[k].source != source || !patchable(l, &e[k]))
			continue;
		if (b.n && !fits(&b, &e[k]))
			write_batch(l, &b);
		if (!b.n)
			b.win = e[k].file_offset;
		b.e[b.n++] = &e[k];
		b.end = e[k].file_offset + e[k].len;
	}
	write_batch(l, &b);
}

/* The extents of the mapped span e[first..last] that are not the map
 * source's, batched by the file they lie in (extent_patchable() says
 * which; the caller puts the others in one by one). */
void patch_span(const struct loader *l, const struct ckpt_extent *e,
		uint64_t first, uint64_t last)
{
	if (!l->verify_buf)
		return;
	for (unsigned s = 0; s <= l->nlinks; s++)
		if (s != l->map_source)
			patch_from(l, e, first, last, s);
}

int extent_patchable(const struct loader *l, const struct ckpt_extent *e)
{
	return l->verify_buf && patchable(l, e);
}
