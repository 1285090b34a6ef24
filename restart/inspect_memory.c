// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_inspect: reading the checkpointed process's memory out of its
 * image (inspect_memory.h). Only what is asked for is read: a page from
 * a raw extent, one zstd extent decompressed at a time, a page of a
 * mapped file from the file itself (the image does not hold pages a
 * file mapping never changed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include "inspect_memory.h"

void inspect_memory_init(struct inspect_memory *m, struct ckpt_image *img)
{
	memset(m, 0, sizeof(*m));
	m->img = img;
	for (int i = 0; i < INSPECT_CACHED_PAGES; i++)
		m->pages[i].addr = 1;
}

void inspect_memory_free(struct inspect_memory *m)
{
	for (int i = 0; i < INSPECT_OPEN_FILES; i++)
		if (m->files[i].name && m->files[i].fd >= 0)
			close(m->files[i].fd);
	free(m->zstd_data);
	m->zstd_data = NULL;
}

const struct ckpt_region *inspect_region_at(const struct ckpt_image *img,
					    uint64_t addr)
{
	uint32_t lo = 0, hi = img->hdr.nregions;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct ckpt_region *r = &img->regions[mid];

		if (addr < r->start)
			hi = mid;
		else if (addr >= r->end)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

static const struct ckpt_extent *extent_at(const struct ckpt_image *img,
					   const struct ckpt_region *r,
					   uint64_t addr)
{
	uint64_t lo = r->first_extent, hi = r->first_extent + r->nextents;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		const struct ckpt_extent *e = &img->extents[mid];

		if (addr < e->addr)
			hi = mid;
		else if (addr >= e->addr + e->len)
			lo = mid + 1;
		else
			return e;
	}
	return NULL;
}

static int read_exact(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, off);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

static int decompress_extent(struct inspect_memory *m,
			     const struct ckpt_extent *e)
{
	void *stored;
	size_t n;
	int err;

	if (m->zstd_extent == e)
		return 0;
	if (!m->zstd_data && !(m->zstd_data = malloc(CKPT_EXTENT_MAX)))
		return -ENOMEM;
	m->zstd_extent = NULL;
	stored = malloc(e->stored_len);
	if (!stored)
		return -ENOMEM;
	err = read_exact(image_extent_fd(m->img, e), stored, e->stored_len,
			 e->file_offset);
	n = err ? 0 : ZSTD_decompress(m->zstd_data, CKPT_EXTENT_MAX, stored,
				      e->stored_len);
	free(stored);
	if (err)
		return err;
	if (ZSTD_isError(n) || n != e->len)
		return -EIO;
	m->zstd_extent = e;
	return 0;
}

static int read_saved_page(struct inspect_memory *m,
			   const struct ckpt_extent *e, uint64_t page,
			   unsigned char *out)
{
	int err;

	if (e->encoding == CKPT_EXTENT_RAW)
		return read_exact(image_extent_fd(m->img, e), out, INSPECT_PAGE,
				  e->file_offset + (page - e->addr));
	err = decompress_extent(m, e);
	if (!err)
		memcpy(out, m->zstd_data + (page - e->addr), INSPECT_PAGE);
	return err;
}

/* Only a regular file: an image may name a FIFO or a device, whose open
 * or read would block or never end. */
int open_regular_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* The mapped file, opened once (a few are kept open). */
static int mapped_file(struct inspect_memory *m, const struct ckpt_region *r)
{
	struct inspect_file *slot = &m->files[r->name % INSPECT_OPEN_FILES];

	if (slot->name == r->name)
		return slot->fd;
	if (slot->name && slot->fd >= 0)
		close(slot->fd);
	slot->name = r->name;
	slot->fd = open_regular_file(image_string(m->img, r->name));
	return slot->fd;
}

/* A page of a file mapping the image does not hold: the file's bytes,
 * zeros past its end. */
static int read_file_page(struct inspect_memory *m,
			  const struct ckpt_region *r, uint64_t page,
			  unsigned char *out)
{
	int fd = mapped_file(m, r);
	ssize_t n;

	if (fd < 0)
		return -EIO;
	n = pread(fd, out, INSPECT_PAGE, r->file_offset + (page - r->start));
	if (n < 0)
		return -EIO;
	memset(out + n, 0, INSPECT_PAGE - n);
	return 0;
}

static int load_page(struct inspect_memory *m, uint64_t page,
		     unsigned char *out)
{
	const struct ckpt_region *r = inspect_region_at(m->img, page);
	const struct ckpt_extent *e;

	if (!r)
		return -EFAULT;
	e = extent_at(m->img, r, page);
	if (e)
		return read_saved_page(m, e, page, out);
	if (region_is_file(r))
		return read_file_page(m, r, page, out);
	memset(out, 0, INSPECT_PAGE);
	return 0;
}

static const unsigned char *cached_page(struct inspect_memory *m,
					uint64_t page, int *err)
{
	struct inspect_page *p =
		&m->pages[(page / INSPECT_PAGE) % INSPECT_CACHED_PAGES];

	if (p->addr == page)
		return p->data;
	p->addr = 1;
	*err = load_page(m, page, p->data);
	if (*err)
		return NULL;
	p->addr = page;
	return p->data;
}

int inspect_memory_read(struct inspect_memory *m, uint64_t addr, void *buf,
			size_t len)
{
	unsigned char *out = buf;
	int err = 0;

	while (len) {
		uint64_t page = addr & ~(uint64_t)(INSPECT_PAGE - 1);
		size_t in = addr - page, n = INSPECT_PAGE - in;
		const unsigned char *p = cached_page(m, page, &err);

		if (!p)
			return err;
		if (n > len)
			n = len;
		memcpy(out, p + in, n);
		out += n;
		addr += n;
		len -= n;
	}
	return 0;
}

uint64_t region_saved_bytes(const struct ckpt_image *img,
				   const struct ckpt_region *r)
{
	uint64_t i, sum = 0;

	for (i = 0; i < r->nextents; i++)
		sum += img->extents[r->first_extent + i].len;
	return sum;
}

/* Bytes the region's extents take in the file, and how they are stored:
 * "raw", "zstd", "mixed" (some of each) or "-" (nothing saved). */
uint64_t region_stored_bytes(const struct ckpt_image *img,
				    const struct ckpt_region *r,
				    const char **encoding)
{
	uint64_t i, sum = 0, nzstd = 0;

	for (i = 0; i < r->nextents; i++) {
		const struct ckpt_extent *e = &img->extents[r->first_extent + i];

		sum += e->source ? 0 : e->stored_len;	/* in a link */
		nzstd += e->encoding == CKPT_EXTENT_ZSTD;
	}
	*encoding = !r->nextents ? "-" : !nzstd ? "raw" :
		    nzstd == r->nextents ? "zstd" : "mixed";
	return sum;
}
