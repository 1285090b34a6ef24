/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Incremental images (ckpt_launch --incremental; docs/image-format.md,
 * "Chains of incremental images"). Each image of a chain carries one hash
 * per saved page. The next checkpoint compares each page with the page at
 * the same address in the previous image (the "base": the image last
 * committed, or the one this process was restarted from): a page the
 * kernel says was not written since the base was read (dirty_pages.c) is
 * referenced without being read, with the base's hash; any other page is
 * hashed, and an equal one referenced where the base found it (the base
 * itself or one of its links); a changed page is written. Pages of
 * memory saved as extents of at most 4 MiB, as in a full image: a delta's
 * extent table describes all of memory; only where the bytes lie differs.
 *
 * Every reference is checked at restart by the extent hash, the fold of
 * its page hashes (CKPT_EXTENT_F_PAGE_HASHED), so a wrong comparison (a
 * hash collision, a base replaced behind our back) fails the restart with
 * a checksum mismatch, never silently. The base must be in the directory of the new image.
 *
 * Images of a chain are named by generation (ckpt_<prog>_<id>.g<N>.img):
 * a link is never replaced by a later checkpoint. Once a full image is
 * committed, the older images of this process are removed. Runs with the
 * threads stopped (chain_write_memory): no malloc, mmap'd buffers only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "ckpt/hash.h"
#include "ckpt/safe_file.h"
#include "dirty_pages.h"
#include "image_chain.h"
#include "image_writer.h"
#include "internal.h"

#define PAGE 4096UL
/* A full image after this many images in a chain (1 full + 15 deltas). */
#define CHAIN_MAX_DEFAULT	16
/* New data written with one pwritev per this many extents (IOV_MAX):
 * a delta's changed pages are scattered, one extent each. */
#define WRITE_BATCH		1024
/* Linux 5.14; older kernels refuse it and the pages fault in as used */
#define MADV_POPULATE_WRITE_CKPT	23

/* The image the next one is compared with: the last one committed, or
 * the one this process was restarted from; "" for none. */
static char base_path[4096];

/* The image written last, until it is committed. */
static struct {
	int chain;
	uint32_t chain_length;
} written;

struct file_view {			/* part of the base file, mapped */
	void *map;
	size_t len;
};

struct base {
	struct ckpt_image_header h;
	char *meta;			/* its metadata block */
	uint64_t *hashes;		/* its page hashes */
	struct file_view meta_view, hashes_view;
	const struct ckpt_extent *extents;
	const struct ckpt_image_link *links;
	const char *strings;
	uint64_t cur, cur_page;		/* lookup cursor (addresses grow) */
};

/* The extent being built: pages contiguous in memory and, for a linked
 * one, in their file. */
struct open_extent {
	uint64_t addr, len, file_offset;
	uint32_t source;
	const unsigned char *data;
	size_t first_hash;		/* its first page's in hashes */
};

struct chain_writer {
	struct image_writer *w;
	int fd;
	uint64_t off;			/* next byte of new data */
	struct table out;		/* the new extent table */
	struct table hashes;		/* one per saved page */
	struct base *b;			/* NULL: a full image */
	struct open_extent cur;
	int tracked;			/* dirty_page_unwritten() answers */
	int moving;			/* the scanned extent changes */
	int plain_hash;			/* ... is read by ckpt_restart */
	unsigned char *snapshot;	/* CKPT_EXTENT_MAX */
	uint32_t used[CKPT_LINKS_MAX + 1];
	struct iovec *pending;		/* new data not written yet, */
	int npending;			/* ... ending at off */
	uint64_t pending_bytes;
};

static int chain_max(void)
{
	const char *s = getenv("CKPT_CHAIN_MAX");
	long n = s ? strtol(s, NULL, 10) : 0;

	return n >= 1 && n <= CKPT_LINKS_MAX + 1 ? (int)n : CHAIN_MAX_DEFAULT;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* The base lies in dir (the link names a file of the delta's directory). */
static int in_directory(const char *path, const char *dir)
{
	char parent[4096];
	const char *name = base_name(path);
	struct stat a, b;

	ckpt_fmt(parent, sizeof(parent), "%.*s", name > path ?
		 (int)(name - path - 1) : 1, name > path ? path : ".");
	return stat(parent[0] ? parent : "/", &a) == 0 && stat(dir, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int check_base_header(const struct ckpt_image_header *h,
			     const unsigned char *page, uint64_t file_size,
			     const char **why)
{
	if (memcmp(h->magic, CKPT_IMAGE_MAGIC, 8) ||
	    h->version != CKPT_IMAGE_VERSION || h->header_size != sizeof(*h) ||
	    ckpt_header_hash(page, h->header_size) != h->header_hash)
		*why = "not an image of this ckpt, or its header is damaged";
	else if (!(h->flags & CKPT_IMG_F_CHAIN) || !h->page_hashes_offset)
		*why = "not an incremental image";
	else if (strncmp(h->unique_id, ckpt.unique_id, sizeof(h->unique_id)))
		*why = NULL;	/* a forked child's first image: full */
	else if (h->image_size != file_size)
		*why = "its size is not the one its header says";
	else if (h->chain_length + 1 > (uint32_t)chain_max() ||
		 h->nlinks >= CKPT_LINKS_MAX)
		*why = NULL;	/* the chain is long enough: a full image */
	else
		return 0;
	return -EINVAL;
}

static int base_tables(struct base *b, const char **why)
{
	const struct ckpt_image_header *h = &b->h;
	uint64_t lo = h->meta_offset, hi = lo + h->meta_size, npages = 0;

	if (h->extents_offset < lo || (h->nlinks && h->links_offset < lo) ||
	    h->strings_offset < lo ||
	    h->nextents > (hi - h->extents_offset) / sizeof(struct ckpt_extent) ||
	    h->nlinks > (hi - h->links_offset) / sizeof(struct ckpt_image_link) ||
	    h->strings_size > hi - h->strings_offset) {
		*why = "its tables lie outside its metadata";
		return -EINVAL;
	}
	b->extents = (const void *)(b->meta + (h->extents_offset - lo));
	b->links = (const void *)(b->meta + (h->links_offset - lo));
	b->strings = b->meta + (h->strings_offset - lo);
	for (uint64_t i = 0; i < h->nextents; i++)
		npages += b->extents[i].len / PAGE;
	if (npages * 8 != h->page_hashes_size) {
		*why = "its page hashes do not match its extents";
		return -EINVAL;
	}
	for (uint32_t i = 0; i < h->nlinks; i++)
		if (b->links[i].name >= h->strings_size ||
		    memchr(b->strings + b->links[i].name, 0,
			   h->strings_size - b->links[i].name) == NULL) {
			*why = "a link's name lies outside its string table";
			return -EINVAL;
		}
	return 0;
}

/* len bytes of the file at off, mapped from the page cache (the base
 * was written by this process: its pages are there), populated at once:
 * a copy into fresh memory would take a page fault per page. */
static void *map_file_part(int fd, uint64_t off, uint64_t len,
			   struct file_view *v)
{
	uint64_t start = off & ~(PAGE - 1);
	void *p;

	v->len = (size_t)(off - start + len);
	p = mmap(NULL, v->len ? v->len : 1, PROT_READ,
		 MAP_PRIVATE | MAP_POPULATE, fd, (off_t)start);
	if (p == MAP_FAILED)
		return NULL;
	v->map = p;
	return (char *)p + (off - start);
}

static int within(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* Metadata and page hashes of the base, each checked against its hash. */
static int base_read(struct base *b, int fd, const char **why)
{
	const struct ckpt_image_header *h = &b->h;

	if (h->meta_size > (1ULL << 30) || h->page_hashes_size > (1ULL << 32) ||
	    !within(h->meta_offset, h->meta_size, h->image_size) ||
	    !within(h->page_hashes_offset, h->page_hashes_size,
		    h->image_size)) {
		*why = "implausible sizes in its header";
		return -EINVAL;
	}
	b->meta = map_file_part(fd, h->meta_offset, h->meta_size,
				&b->meta_view);
	b->hashes = map_file_part(fd, h->page_hashes_offset,
				  h->page_hashes_size, &b->hashes_view);
	if (!b->meta || !b->hashes) {
		*why = "mapping it failed";
		return -EIO;
	}
	if (ckpt_hash64(b->meta, h->meta_size, 0) != h->meta_hash ||
	    ckpt_hash64(b->hashes, h->page_hashes_size, 0) !=
	    h->page_hashes_hash) {
		*why = "checksum mismatch";
		return -EINVAL;
	}
	return base_tables(b, why);
}

static void base_free(struct base *b)
{
	if (b->meta_view.map)
		munmap(b->meta_view.map, b->meta_view.len ?
		       b->meta_view.len : 1);
	if (b->hashes_view.map)
		munmap(b->hashes_view.map, b->hashes_view.len ?
		       b->hashes_view.len : 1);
	memset(b, 0, sizeof(*b));
}

/* The previous image as the base of a delta written into dir; -errno if
 * none can be (the image is then full; *why says why, NULL when that is
 * the rule: no previous image, or its chain is long enough). */
static int base_load(struct base *b, const char *dir, const char **why)
{
	unsigned char page[CKPT_HEADER_SIZE];
	struct stat st;
	int fd, r;

	memset(b, 0, sizeof(*b));
	*why = NULL;
	if (!base_path[0])
		return -ENOENT;
	if (!in_directory(base_path, dir)) {
		*why = "it lies in another directory";
		return -EXDEV;
	}
	fd = open(base_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		*why = "it cannot be opened";
		return r;
	}
	r = fstat(fd, &st) < 0 ? -errno :
	    read_at(fd, page, sizeof(page), 0);
	if (r == 0) {
		memcpy(&b->h, page, sizeof(b->h));
		r = check_base_header(&b->h, page, st.st_size, why);
	} else {
		*why = "reading its header failed";
	}
	if (r == 0)
		r = base_read(b, fd, why);
	close(fd);
	if (r < 0)
		base_free(b);
	return r;
}

/* Where the base holds the page at a, with its hash: 1 if it does, as
 * raw data (a compressed extent cannot be referenced page by page). */
static int base_find(struct base *b, uint64_t a, uint32_t *source,
		     uint64_t *file_offset, uint64_t *hash)
{
	const struct ckpt_extent *e;
	uint64_t idx;

	while (b->cur < b->h.nextents &&
	       b->extents[b->cur].addr + b->extents[b->cur].len <= a) {
		b->cur_page += b->extents[b->cur].len / PAGE;
		b->cur++;
	}
	if (b->cur == b->h.nextents)
		return 0;
	e = &b->extents[b->cur];
	if (e->addr > a || e->encoding != CKPT_EXTENT_RAW ||
	    e->source > b->h.nlinks)
		return 0;
	idx = b->cur_page + (a - e->addr) / PAGE;
	*hash = b->hashes[idx];
	*source = e->source + 1;	/* link 0 is the base itself */
	*file_offset = e->file_offset + (a - e->addr);
	return *hash != 0;
}

/* The links of a delta: the base, then the base's own links. */
static int add_links(struct chain_writer *c)
{
	struct image_writer *w = c->w;
	const struct base *b = c->b;
	struct ckpt_image_link *l = table_push(&w->links);

	if (!l)
		return -ENOMEM;
	*l = (struct ckpt_image_link){ .generation = b->h.generation,
		.header_hash = b->h.header_hash,
		.image_size = b->h.image_size };
	if (add_string(w, base_name(base_path), &l->name) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->h.nlinks; i++) {
		l = table_push(&w->links);
		if (!l)
			return -ENOMEM;
		*l = b->links[i];
		if (add_string(w, b->strings + b->links[i].name, &l->name) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The open extent's hash, the fold of its page hashes: those of new
 * data not hashed yet (0: compared with no base page) computed here,
 * from the bytes about to be written (and kept as the page hashes, but
 * for memory that moves: 0, never matched). */
static uint64_t extent_hash(struct chain_writer *c)
{
	struct open_extent *o = &c->cur;
	uint64_t *ph = (uint64_t *)c->hashes.base + o->first_hash, acc = 0;

	for (uint64_t i = 0; i < o->len / PAGE; i++) {
		uint64_t h = o->source || ph[i] ? ph[i] :
			     ckpt_hash64(o->data + i * PAGE, PAGE, 0);

		ph[i] = c->moving ? 0 : h;
		acc = ckpt_page_hash_fold(acc, h);
	}
	return acc;
}

/* The new data queued by close_extent() into the file, before off. */
static int write_pending(struct chain_writer *c)
{
	int r = pwritev_all(c->fd, c->pending, c->npending,
			    c->off - c->pending_bytes);

	c->npending = 0;
	c->pending_bytes = 0;
	return r;
}

/* len bytes of new data at off, written with the next batch: the
 * program stays stopped until write_pending() (the snapshot of moving
 * memory is written before it is reused). */
static int queue_write(struct chain_writer *c, const void *data,
		       uint64_t len)
{
	int r = 0;

	if (c->npending == WRITE_BATCH)
		r = write_pending(c);
	c->pending[c->npending++] = (struct iovec){
		.iov_base = (void *)data, .iov_len = len };
	c->pending_bytes += len;
	c->off += len;
	return r;
}

/* The open extent into the table; its new data into the file. */
static int close_extent(struct chain_writer *c)
{
	struct open_extent *o = &c->cur;
	struct ckpt_extent *e;
	uint64_t hash;
	int r = 0;

	if (!o->len)
		return 0;
	hash = extent_hash(c);
	e = table_push(&c->out);
	if (!e)
		return -ENOMEM;
	*e = (struct ckpt_extent){ .addr = o->addr, .len = o->len,
		.file_offset = o->file_offset, .source = o->source,
		.encoding = CKPT_EXTENT_RAW, .stored_len = o->len,
		.hash = hash, .flags = CKPT_EXTENT_F_PAGE_HASHED };
	if (c->plain_hash) {
		e->hash = ckpt_hash64(o->data, o->len, 0);
		e->flags = 0;
	}
	if (!o->source) {
		e->file_offset = c->off;
		r = queue_write(c, o->data, o->len);
	}
	c->used[o->source]++;
	o->len = 0;
	return r;
}

/* One page into the open extent, or a new one after it; its hash (0:
 * new data not hashed yet, hashed when its extent is closed) into the
 * page hashes. */
static int add_page(struct chain_writer *c, uint64_t a,
		    const unsigned char *data, uint32_t source,
		    uint64_t file_offset, uint64_t hash)
{
	struct open_extent *o = &c->cur;
	int r = 0;

	if (o->len && o->source == source && o->addr + o->len == a &&
	    (!source || o->file_offset + o->len == file_offset)) {
		o->len += PAGE;
	} else {
		r = close_extent(c);
		*o = (struct open_extent){ .addr = a, .len = PAGE,
			.source = source, .file_offset = file_offset,
			.data = data, .first_hash = c->hashes.n };
	}
	*(uint64_t *)table_push(&c->hashes) = hash;
	return r;
}

/* Pages from a not written since the base, which holds them in one raw
 * extent with a hash each, up to end: how many (0 or 1: page by page). */
static uint64_t unwritten_run(struct chain_writer *c, uint64_t a,
			      uint64_t end)
{
	struct base *b = c->b;
	const struct ckpt_extent *e;
	uint64_t stop = dirty_unwritten_until(a), n, idx, i, off, hash;
	uint32_t source;

	if (stop <= a || !base_find(b, a, &source, &off, &hash))
		return 0;
	e = &b->extents[b->cur];
	if (stop > e->addr + e->len)
		stop = e->addr + e->len;
	if (stop > end)
		stop = end;
	n = (stop - a) / PAGE;
	idx = b->cur_page + (a - e->addr) / PAGE;
	for (i = 0; i < n && b->hashes[idx + i]; i++)
		;
	return i;
}

/* n pages from a, not written since the base: referenced where the base
 * has them (unwritten_run() found them in one of its extents), their
 * hashes the base's, added to the open extent as add_page() would one by
 * one. */
static int add_base_run(struct chain_writer *c, uint64_t a, uint64_t n)
{
	struct base *b = c->b;
	const struct ckpt_extent *e = &b->extents[b->cur];
	struct open_extent *o = &c->cur;
	uint64_t off = e->file_offset + (a - e->addr);
	uint64_t idx = b->cur_page + (a - e->addr) / PAGE;
	uint32_t source = e->source + 1;
	int r = 0;

	if (o->len && o->source == source && o->addr + o->len == a &&
	    o->file_offset + o->len == off) {
		o->len += n * PAGE;
	} else {
		r = close_extent(c);
		*o = (struct open_extent){ .addr = a, .len = n * PAGE,
			.source = source, .file_offset = off,
			.first_hash = c->hashes.n };
	}
	memcpy((uint64_t *)c->hashes.base + c->hashes.n, &b->hashes[idx],
	       n * sizeof(uint64_t));
	c->hashes.n += n;
	return r;
}

/* ckpt_restart reads shared memory and the old vdso itself, with the
 * plain extent hash. */
static int region_page_hashed(const struct ckpt_region *r)
{
	return r->kind != CKPT_REGION_ANON_SHARED &&
	       r->kind != CKPT_REGION_VDSO;
}

/*
 * One extent of the memory scan, page by page: referenced where the base
 * has the same page (not written since, or of the same hash), else
 * written, but for a page of zeros in memory restored as zeros: left out
 * (the scan leaves that test to this walk, which skips the pages known
 * not written since the base). Memory that changes while the image is
 * written (the manager's stack, below a parked thread) is taken from one
 * snapshot, always written whole, and its page hashes are 0 (never
 * matched).
 */
static int add_scanned_extent(struct chain_writer *c,
			      const struct ckpt_region *r,
			      const struct ckpt_extent *e)
{
	const unsigned char *src = (const void *)(uintptr_t)e->addr;
	int moving = manager_stack_overlaps(e->addr, e->len) ||
		     threads_park_area_overlaps(e->addr, e->len);
	int linkable = c->b && !moving && r->kind != CKPT_REGION_ANON_SHARED &&
		       r->kind != CKPT_REGION_VDSO;
	int drop_zeros = !moving && memory_restores_as_zeros(r->kind, r->prot);
	int rc = 0;

	if (moving) {
		memcpy(c->snapshot, src, e->len);
		src = c->snapshot;
	}
	c->moving = moving;
	c->plain_hash = !region_page_hashed(r);
	if (table_reserve(&c->hashes, e->len / PAGE) < 0)
		return -ENOMEM;
	for (uint64_t p = 0; p < e->len && rc == 0; p += PAGE) {
		uint64_t a = e->addr + p, h = 0, bh, off = 0, run;
		uint32_t source = 0;

		if (linkable && c->tracked &&
		    (run = unwritten_run(c, a, e->addr + e->len)) > 1) {
			rc = add_base_run(c, a, run);
			p += (run - 1) * PAGE;
			continue;
		}
		if (linkable && base_find(c->b, a, &source, &off, &bh) &&
		    c->tracked && dirty_page_unwritten(a)) {
			rc = add_page(c, a, src + p, source, off, bh);
			continue;
		}
		if (drop_zeros && memory_page_is_zero(src + p))
			continue;
		if (source && (h = ckpt_hash64(src + p, PAGE, 0)) != bh)
			source = 0;
		rc = add_page(c, a, src + p, source, off, h);
	}
	if (rc == 0)
		rc = close_extent(c);
	/* the snapshot is reused by the next extent */
	return rc == 0 && moving ? write_pending(c) : rc;
}

static int add_memory(struct chain_writer *c)
{
	struct image_writer *w = c->w;
	struct ckpt_region *regions = (struct ckpt_region *)w->regions.base;
	const struct ckpt_extent *scanned =
		(const struct ckpt_extent *)w->extents.base;
	int rc = 0;

	for (size_t i = 0; i < w->regions.n && rc == 0; i++) {
		struct ckpt_region *r = &regions[i];
		uint64_t first = c->out.n;

		for (uint32_t k = 0; k < r->nextents && rc == 0; k++)
			rc = add_scanned_extent(c, r,
						&scanned[r->first_extent + k]);
		r->first_extent = first;
		r->nextents = c->out.n - first;
	}
	return rc ? rc : write_pending(c);
}

/* Links no extent uses are dropped (the chain then needs fewer files);
 * a delta that uses none is a full image. */
static void drop_unused_links(struct chain_writer *c)
{
	struct image_writer *w = c->w;
	struct ckpt_image_link *l = (struct ckpt_image_link *)w->links.base;
	struct ckpt_extent *e = (struct ckpt_extent *)c->out.base;
	uint32_t map[CKPT_LINKS_MAX + 1], n = 0;

	for (uint32_t i = 0; i < w->links.n; i++) {
		map[i + 1] = c->used[i + 1] ? ++n : 0;
		if (c->used[i + 1])
			l[n - 1] = l[i];
	}
	w->links.n = n;
	for (size_t i = 0; i < c->out.n; i++)
		if (e[i].source)
			e[i].source = map[e[i].source];
}

static void log_full_image(const char *why)
{
	if (why)
		ckpt_log("incremental checkpoint: the previous image %s cannot "
			 "be the base of this one (%s); writing a full image",
			 base_path, why);
}

/* Room for n more entries of t, its pages populated in one call: a
 * page fault each costs more (docs/performance.md, "Protection
 * re-armed while the program runs"). */
static int reserve_populated(struct table *t, size_t n)
{
	if (table_reserve(t, n) < 0)
		return -ENOMEM;
	madvise(t->base, n * t->elem, MADV_POPULATE_WRITE_CKPT);
	return 0;
}

/* The new tables: a page hash per scanned page; an extent per scanned
 * extent and per base extent, about (more grow the table). */
static int reserve_tables(struct chain_writer *c)
{
	const struct ckpt_extent *e = (const void *)c->w->extents.base;
	size_t pages = 0;

	for (size_t i = 0; i < c->w->extents.n; i++)
		pages += e[i].len / PAGE;
	if (reserve_populated(&c->hashes, pages) < 0)
		return -ENOMEM;
	return reserve_populated(&c->out, c->w->extents.n + 1024 +
				 (c->b ? c->b->h.nextents : 0));
}

static int chain_setup(struct chain_writer *c, struct image_writer *w,
		       int fd, const char *dir, struct base *b)
{
	const char *why;

	memset(c, 0, sizeof(*c));
	c->w = w;
	c->fd = fd;
	c->off = CKPT_HEADER_SIZE;
	c->out.elem = sizeof(struct ckpt_extent);
	c->hashes.elem = sizeof(uint64_t);
	c->snapshot = map_anon(CKPT_EXTENT_MAX);
	c->pending = map_anon(WRITE_BATCH * sizeof(struct iovec));
	if (!c->snapshot || !c->pending)
		return -ENOMEM;
	if (base_load(b, dir, &why) == 0)
		c->b = b;
	else
		log_full_image(why);
	if (reserve_tables(c) < 0)
		return -ENOMEM;
	return c->b ? add_links(c) : 0;
}

static void chain_teardown(struct chain_writer *c)
{
	if (c->snapshot)
		munmap(c->snapshot, CKPT_EXTENT_MAX);
	if (c->pending)
		munmap(c->pending, WRITE_BATCH * sizeof(struct iovec));
	table_free(&c->out);
	table_free(&c->hashes);
	if (c->b)
		base_free(c->b);
}

/* The page hashes after the data, 8-aligned; *end after them. */
static int write_page_hashes(struct chain_writer *c,
			     struct ckpt_image_header *h, uint64_t *end)
{
	uint64_t size = c->hashes.n * sizeof(uint64_t);

	h->page_hashes_offset = (c->off + 7) & ~7ULL;
	h->page_hashes_size = size;
	h->page_hashes_hash = ckpt_hash64(c->hashes.base, size, 0);
	*end = h->page_hashes_offset + size;
	return write_all(c->fd, c->hashes.base, size, h->page_hashes_offset);
}

int chain_write_memory(struct image_writer *w, int fd, const char *dir,
		       struct ckpt_image_header *h, uint64_t *end,
		       char *err, size_t errlen)
{
	struct chain_writer c;
	struct base b;
	struct table swap;
	int r;

	memset(&b, 0, sizeof(b));
	r = chain_setup(&c, w, fd, dir, &b);
	/* after the base is read (its generation), before memory is */
	if (r == 0)
		c.tracked = dirty_pages_collect(c.b ? b.h.generation : 0,
						h->generation);
	if (r == 0)
		r = add_memory(&c);
	if (r == 0) {
		drop_unused_links(&c);
		h->flags |= CKPT_IMG_F_CHAIN;
		h->chain_length = w->links.n ? b.h.chain_length + 1 : 1;
		r = write_page_hashes(&c, h, end);
	}
	if (r < 0) {
		ckpt_fmt(err, errlen, "writing the incremental image's memory: "
			 "%s", strerror(-r));
	} else {
		swap = w->extents;	/* the scan's table goes */
		w->extents = c.out;
		c.out = swap;
		written.chain = 1;
		written.chain_length = h->chain_length;
	}
	chain_teardown(&c);
	return r;
}

void chain_write_plain(void)
{
	written.chain = 0;
}

void chain_remove_older_images(const char *dir, uint64_t generation)
{
	char prefix[512], buf[4096];
	struct ckpt_refusal ref;
	size_t plen;
	long n;
	int dirfd;

	ckpt_fmt(prefix, sizeof(prefix), "ckpt_%s_%s.g", ckpt.program,
		 ckpt.unique_id);
	plen = strlen(prefix);
	manager_fds_hold();
	dirfd = manager_fd_keep(ckpt_safe_dir_open(dir, &ref));
	manager_fds_release();
	if (dirfd < 0)
		return;
	while ((n = syscall(SYS_getdents64, dirfd, buf, sizeof(buf))) > 0) {
		for (long pos = 0; pos < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + pos);
			char *endp;
			unsigned long long g;

			pos += d->d_reclen;
			if (strncmp(d->d_name, prefix, plen))
				continue;
			g = strtoull(d->d_name + plen, &endp, 10);
			if (endp != d->d_name + plen && !strcmp(endp, ".img") &&
			    g < generation &&
			    ckpt_own_leftover(dirfd, d->d_name, &ref) == 0)
				unlinkat(dirfd, d->d_name, 0);
		}
	}
	manager_fd_close(dirfd);
}

void chain_image_committed(const char *path, uint64_t generation)
{
	char dir[4096];
	const char *name = base_name(path);

	if (!written.chain) {
		base_path[0] = 0;
		return;
	}
	ckpt_fmt(base_path, sizeof(base_path), "%s", path);
	if (written.chain_length != 1)
		return;
	ckpt_fmt(dir, sizeof(dir), "%.*s", name > path ?
		 (int)(name - path - 1) : 1, name > path ? path : ".");
	chain_remove_older_images(dir[0] ? dir : "/", generation);
}

void chain_image_answered(uint64_t generation)
{
	if (!written.chain)
		return;
	dirty_pages_rearm(generation);
	compaction_poll();
	compaction_start(base_path, generation, written.chain_length);
}

/* A restarted process continues the chain of the image it came from. */
static int chain_restore(const struct ckpt_restart_args *args)
{
	ckpt_fmt(base_path, sizeof(base_path), "%s", args->image_path);
	dirty_pages_after_restart();
	compaction_forget();
	return 0;
}

const struct ckpt_resource_ops image_chain_resource_ops = {
	.name = "incremental images",
	.restore = chain_restore,
};
