// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Read the image header and metadata block into the work area and check
 * them again. ckpt_restart validated the whole image (restart/image_check.c)
 * and passes the header hash it saw: matching it binds us to the same,
 * already validated header and, through meta_hash, metadata. The bounds
 * checks here only keep a file changed behind our back from crashing us.
 */
#include "ckpt/hash.h"
#include "loader.h"

static void read_exact(const struct loader *l, void *buf, uint64_t len,
		       uint64_t off, const char *what)
{
	unsigned char *p = buf;
	long n;

	while (len) {
		n = sys_pread(l->image_fd, p, len > (1UL << 30) ? 1UL << 30 :
				len, off);
		if (n == -4)	/* EINTR */
			continue;
		if (n < 0)
			loader_fail("reading the %s at offset %lu failed: %s",
				    what, off, errno_text(n));
		if (n == 0)
			loader_fail("reading the %s at offset %lu failed: "
				    "image truncated", what, off);
		p += n;
		off += n;
		len -= n;
	}
}

/* The header page is read whole: the hash covers header_size bytes,
 * which an older image has fewer of (the rest reads as 0). */
static void check_header(struct loader *l)
{
	static unsigned char page[CKPT_HEADER_SIZE];
	const struct ckpt_image_header *hp = (const void *)page;
	struct ckpt_image_header h;

	read_exact(l, page, sizeof(page), 0, "header");
	h = *hp;
	if (memcmp(h.magic, CKPT_IMAGE_MAGIC, 8))
		loader_fail("not a ckpt image (bad magic)");
	if (h.version < CKPT_IMAGE_VERSION_MIN ||
	    h.version > CKPT_IMAGE_VERSION)
		loader_fail("image format version %u, this ckpt reads %d to %d",
			    h.version, CKPT_IMAGE_VERSION_MIN,
			    CKPT_IMAGE_VERSION);
	if (h.header_size < CKPT_HEADER_SIZE_MIN ||
	    h.header_size > CKPT_HEADER_SIZE ||
	    ckpt_header_hash(page, h.header_size) != h.header_hash)
		loader_fail("header checksum mismatch: the header is corrupt");
	if (h.header_size < sizeof(h))
		memset((char *)&h + h.header_size, 0,
		       sizeof(h) - h.header_size);
	l->hdr = h;
	if (l->hdr.header_hash != l->header_hash)
		loader_fail("the image changed since ckpt_restart checked it");
	if (h.arch != ARCH_IMAGE_ARCH)
		loader_fail("image is for architecture %u, not this one",
			    h.arch);
	if (h.page_size != l->page_size)
		loader_fail("image page size %u, this system uses %lu",
			    h.page_size, l->page_size);
}

/* A table of count records of size bytes at file offset off, inside the
 * metadata block; returns its address in memory. */
static const void *meta_table(const struct loader *l, uint64_t off,
			      uint64_t count, uint64_t size, const char *what)
{
	uint64_t start = l->hdr.meta_offset, end = start + l->hdr.meta_size;

	if (off < start || off > end || count > (end - off) / size ||
	    (size > 1 && (off - start) % 8))
		loader_fail("%s table out of the metadata block", what);
	return l->meta + (off - start);
}

void image_read(struct loader *l)
{
	const struct ckpt_image_header *h = &l->hdr;
	unsigned char *meta;

	check_header(l);
	if (h->meta_size > l->work_end - l->work_next - l->page_size)
		loader_fail("metadata block of %lu bytes does not fit the "
			    "loader's work area", h->meta_size);
	meta = (unsigned char *)work_alloc(l, h->meta_size);
	read_exact(l, meta, h->meta_size, h->meta_offset, "metadata");
	if (ckpt_hash64(meta, h->meta_size, 0) != h->meta_hash)
		loader_fail("metadata checksum mismatch: the image is corrupt");
	l->meta = meta;
	l->regions = meta_table(l, h->regions_offset, h->nregions,
				sizeof(struct ckpt_region), "region");
	l->extents = meta_table(l, h->extents_offset, h->nextents,
				sizeof(struct ckpt_extent), "extent");
	l->strings = meta_table(l, h->strings_offset, h->strings_size, 1,
				"string");
	l->strings_size = h->strings_size;
	if (l->strings_size && l->strings[l->strings_size - 1])
		loader_fail("string table is not NUL-terminated");
	chain_read_links(l);
}

const char *image_string(const struct loader *l, uint32_t off)
{
	if (off == 0 || off >= l->strings_size)
		return "";
	return l->strings + off;
}

int region_is_special(const struct ckpt_region *r)
{
	return r->kind == CKPT_REGION_VDSO || r->kind == CKPT_REGION_VVAR ||
	       r->kind == CKPT_REGION_VVAR_VCLOCK;
}
