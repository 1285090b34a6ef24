// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Validate a checkpoint image before anything irreversible happens: the
 * header, the metadata block, the region/extent/thread/fd tables, and
 * whether this machine can restart it. Shared by ckpt_restart and
 * ckpt_inspect so both reject exactly the same images.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include "ckpt/hash.h"
#include <zstd.h>
#include "image_check.h"

int image_fail(struct ckpt_image *img, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(img->err, sizeof(img->err), fmt, ap);
	va_end(ap);
	return -err;
}

/* [off, off+len) inside [lo, hi), without overflow. */
static bool range_inside(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi)
{
	return off >= lo && off <= hi && len <= hi - off;
}

int image_read_at(struct ckpt_image *img, int fd, void *buf, size_t len,
		  uint64_t off, const char *what)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return image_fail(img, errno, "reading the %s failed: %s",
					  what, strerror(errno));
		if (n == 0)
			return image_fail(img, EIO, "reading the %s failed: "
					  "truncated at offset %llu", what,
					  (unsigned long long)(off + done));
		done += n;
	}
	return 0;
}

static int read_exact(struct ckpt_image *img, void *buf, size_t len,
		      uint64_t off, const char *what)
{
	return image_read_at(img, img->fd, buf, len, off, what);
}

const char *arch_name(uint32_t arch)
{
	static char other[32];

	switch (arch) {
	case CKPT_ARCH_X86_64:
		return "x86_64";
	case CKPT_ARCH_AARCH64:
		return "aarch64";
	}
	snprintf(other, sizeof(other), "architecture %u", arch);
	return other;
}

const char *region_kind_name(uint32_t kind)
{
	static const char *const names[] = {
		[CKPT_REGION_ANON] = "anon",
		[CKPT_REGION_HEAP] = "heap",
		[CKPT_REGION_STACK] = "stack",
		[CKPT_REGION_ANON_SHARED] = "anon-shared",
		[CKPT_REGION_FILE_PRIVATE] = "file-private",
		[CKPT_REGION_FILE_SHARED] = "file-shared",
		[CKPT_REGION_VDSO] = "vdso",
		[CKPT_REGION_VVAR] = "vvar",
		[CKPT_REGION_VVAR_VCLOCK] = "vvar-vclock",
		[CKPT_REGION_DELETED_PRIVATE] = "deleted-private",
	};

	if (kind < sizeof(names) / sizeof(*names) && names[kind])
		return names[kind];
	return NULL;
}

const char *fd_kind_name(uint32_t kind)
{
	static const char *const names[] = {
		[CKPT_FD_FILE] = "file",
		[CKPT_FD_FILE_DELETED] = "deleted-file",
		[CKPT_FD_DIR] = "dir",
		[CKPT_FD_DEVICE] = "device",
		[CKPT_FD_TTY] = "tty",
		[CKPT_FD_STDIO_INHERIT] = "stdio-inherit",
		[CKPT_FD_UNSUPPORTED] = "unsupported",
		[CKPT_FD_PIPE] = "pipe",
		[CKPT_FD_UNIX_STREAM] = "unix-stream",
		[CKPT_FD_FIFO] = "fifo",
		[CKPT_FD_EVENTFD] = "eventfd",
		[CKPT_FD_TIMERFD] = "timerfd",
		[CKPT_FD_SIGNALFD] = "signalfd",
		[CKPT_FD_EPOLL] = "epoll",
		[CKPT_FD_INOTIFY] = "inotify",
		[CKPT_FD_PIDFD] = "pidfd",
		[CKPT_FD_SOCKET_LISTEN] = "listen-socket",
		[CKPT_FD_SOCKET_BOUND] = "bound-socket",
		[CKPT_FD_SOCKET_OUTSIDE] = "outside-socket",
		[CKPT_FD_PTY_MASTER] = "pty-master",
		[CKPT_FD_UNIX_DGRAM] = "unix-dgram",
		[CKPT_FD_UNIX_SEQPACKET] = "unix-seqpacket",
	};

	if (kind < sizeof(names) / sizeof(*names) && names[kind])
		return names[kind];
	return NULL;
}

int region_is_special(const struct ckpt_region *r)
{
	return r->kind == CKPT_REGION_VDSO || r->kind == CKPT_REGION_VVAR ||
	       r->kind == CKPT_REGION_VVAR_VCLOCK;
}

int region_is_file(const struct ckpt_region *r)
{
	return r->kind == CKPT_REGION_FILE_PRIVATE ||
	       r->kind == CKPT_REGION_FILE_SHARED;
}

const char *image_string(const struct ckpt_image *img, uint32_t off)
{
	if (off == 0 || off >= img->strings_size)
		return "";
	return img->strings + off;
}

/* The blob was validated at open: inside the table, NUL-terminated. */
const char *image_thread_name(const struct ckpt_image *img, uint32_t i)
{
	const char *p = image_string(img, img->hdr.thread_names);
	const char *end = p + img->hdr.thread_names_size;

	if (!img->hdr.thread_names_size)
		return "";
	for (; i && p < end; i--)
		p += strlen(p) + 1;
	return p < end ? p : "";
}

/* Magic before size: a short text file is "not a ckpt image", not
 * "truncated". */
static int check_header(struct ckpt_image *img)
{
	struct ckpt_image_header h;
	char buf[CKPT_HEADER_SIZE];
	size_t have = img->file_size < sizeof(buf) ? img->file_size
						   : sizeof(buf);
	int err;

	err = read_exact(img, buf, have, 0, "header");
	if (err)
		return err;
	if (have < 8 || memcmp(buf, CKPT_IMAGE_MAGIC, 8))
		return image_fail(img, EINVAL, "not a ckpt image (bad magic)");
	if (have < sizeof(buf))
		return image_fail(img, EINVAL, "truncated: the file has %zu "
				  "bytes, less than the %d-byte header", have,
				  CKPT_HEADER_SIZE);
	memcpy(&h, buf, sizeof(h));
	if (h.version < CKPT_IMAGE_VERSION_MIN)
		return image_fail(img, EINVAL, "image format version %u, this "
				  "ckpt reads %d to %d: made by an older ckpt, "
				  "restart it with the ckpt that made it",
				  h.version, CKPT_IMAGE_VERSION_MIN,
				  CKPT_IMAGE_VERSION);
	if (h.version > CKPT_IMAGE_VERSION)
		return image_fail(img, EINVAL, "image format version %u, this "
				  "ckpt reads %d to %d: made by a newer ckpt",
				  h.version, CKPT_IMAGE_VERSION_MIN,
				  CKPT_IMAGE_VERSION);
	/* older images have a shorter header, newer ones may have more */
	if (h.header_size < CKPT_HEADER_SIZE_MIN ||
	    h.header_size > CKPT_HEADER_SIZE)
		return image_fail(img, EINVAL, "header size %u, expected %zu "
				  "to %d: the header is corrupt", h.header_size,
				  CKPT_HEADER_SIZE_MIN, CKPT_HEADER_SIZE);
	if (ckpt_header_hash(buf, h.header_size) != h.header_hash)
		return image_fail(img, EINVAL, "header checksum mismatch: the "
				  "header is corrupt");
	/* fields the writer's header did not have read as 0 */
	memset(&img->hdr, 0, sizeof(img->hdr));
	memcpy(&img->hdr, buf, h.header_size < sizeof(h) ? h.header_size :
							  sizeof(h));
	return 0;
}

static int check_sizes(struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;

	if (h->image_size > img->file_size)
		return image_fail(img, EINVAL, "truncated: the header says "
				  "%llu bytes, the file has %llu",
				  (unsigned long long)h->image_size,
				  (unsigned long long)img->file_size);
	if (h->image_size < img->file_size)
		return image_fail(img, EINVAL, "%llu bytes of garbage after the "
				  "image's %llu bytes",
				  (unsigned long long)(img->file_size -
						       h->image_size),
				  (unsigned long long)h->image_size);
	if (h->page_size < 4096 || (h->page_size & (h->page_size - 1)))
		return image_fail(img, EINVAL, "page size %u is not a power of "
				  "two >= 4096: the header is corrupt",
				  h->page_size);
	if (h->data_offset < CKPT_HEADER_SIZE ||
	    h->data_offset % h->page_size || h->data_offset > h->image_size)
		return image_fail(img, EINVAL, "data offset %llu is not a "
				  "page-aligned offset after the header",
				  (unsigned long long)h->data_offset);
	return 0;
}

static int read_meta(struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;
	int err;

	if (!range_inside(h->meta_offset, h->meta_size, CKPT_HEADER_SIZE,
			  h->image_size))
		return image_fail(img, EINVAL, "metadata block (%llu bytes at "
				  "offset %llu) lies outside the image",
				  (unsigned long long)h->meta_size,
				  (unsigned long long)h->meta_offset);
	if (h->meta_size > IMAGE_META_MAX)
		return image_fail(img, EINVAL, "metadata block of %llu bytes is "
				  "implausibly large: the header is corrupt",
				  (unsigned long long)h->meta_size);
	img->meta = malloc(h->meta_size ? h->meta_size : 1);
	if (!img->meta)
		return image_fail(img, ENOMEM, "no memory for the %llu-byte "
				  "metadata block",
				  (unsigned long long)h->meta_size);
	err = read_exact(img, img->meta, h->meta_size, h->meta_offset,
			 "metadata");
	if (err)
		return err;
	if (ckpt_hash64(img->meta, h->meta_size, 0) != h->meta_hash)
		return image_fail(img, EINVAL, "metadata checksum mismatch: the "
				  "image is corrupt");
	return 0;
}

/* A run of NUL-separated strings inside the string table, ending in a
 * NUL (or empty: not saved). */
static int check_strings_blob(struct ckpt_image *img, uint32_t off,
			      uint32_t size, const char *what)
{
	if (!size)
		return 0;
	if (!off || off >= img->strings_size ||
	    size > img->strings_size - off || img->strings[off + size - 1])
		return image_fail(img, EINVAL, "the saved %s (%u bytes at "
				  "string offset %u) is outside the %llu-byte "
				  "string table or not NUL-terminated: the "
				  "header is corrupt", what, size, off,
				  (unsigned long long)img->strings_size);
	return 0;
}

static int meta_table(struct ckpt_image *img, uint64_t off, uint64_t count,
		      uint64_t size, const char *what, const void **out)
{
	uint64_t lo = img->hdr.meta_offset, hi = lo + img->hdr.meta_size;

	if (!count && !off) {	/* an empty table a writer did not place */
		*out = NULL;
		return 0;
	}
	if (count > (hi - lo) / size || !range_inside(off, count * size, lo, hi))
		return image_fail(img, EINVAL, "%s table (%llu entries at "
				  "offset %llu) lies outside the metadata block",
				  what, (unsigned long long)count,
				  (unsigned long long)off);
	if (size > 1 && (off - lo) % 8)
		return image_fail(img, EINVAL, "%s table at offset %llu is not "
				  "8-byte aligned", what,
				  (unsigned long long)off);
	*out = img->meta + (off - lo);
	return 0;
}

/* The signal state (version 7): absent, or whole inside the metadata. */
static int find_signal_tables(struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;
	const void *p;
	int err;

	img->signals = NULL;
	img->thread_signals = NULL;
	if (!h->signals_offset && !h->nthread_signals)
		return 0;
	err = meta_table(img, h->signals_offset, 1, sizeof(*img->signals),
			 "signal state", &p);
	if (err)
		return err;
	img->signals = p;
	err = meta_table(img, h->signals_offset + sizeof(*img->signals),
			 h->nthread_signals, sizeof(*img->thread_signals),
			 "thread signal", &p);
	img->thread_signals = p;
	return err;
}

static int find_tables(struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;
	const void *p;
	int err;

	err = meta_table(img, h->regions_offset, h->nregions,
			 sizeof(*img->regions), "region", &p);
	if (err)
		return err;
	img->regions = p;
	err = meta_table(img, h->extents_offset, h->nextents,
			 sizeof(*img->extents), "extent", &p);
	if (err)
		return err;
	img->extents = p;
	err = meta_table(img, h->threads_offset, h->nthreads,
			 sizeof(*img->threads), "thread", &p);
	if (err)
		return err;
	img->threads = p;
	err = meta_table(img, h->fds_offset, h->nfds, sizeof(*img->fds), "fd",
			 &p);
	if (err)
		return err;
	img->fds = p;
	err = meta_table(img, h->files_offset, h->nfiles, sizeof(*img->files),
			 "file", &p);
	if (err)
		return err;
	img->files = p;
	err = meta_table(img, h->links_offset, h->nlinks, sizeof(*img->links),
			 "link", &p);
	if (err)
		return err;
	img->links = p;
	err = find_signal_tables(img);
	if (err)
		return err;
	err = meta_table(img, h->strings_offset, h->strings_size, 1, "string",
			 &p);
	if (err)
		return err;
	img->strings = p;
	img->strings_size = h->strings_size;
	if (img->strings_size && img->strings[img->strings_size - 1])
		return image_fail(img, EINVAL, "the string table is not "
				  "NUL-terminated: the metadata is corrupt");
	err = check_strings_blob(img, h->cmdline, h->cmdline_size,
				 "command line");
	if (!err)
		err = check_strings_blob(img, h->environment,
					 h->environment_size, "environment");
	if (!err)
		err = check_strings_blob(img, h->thread_names,
					 h->thread_names_size, "thread names");
	return err;
}

static int check_name(struct ckpt_image *img, uint32_t off, const char *what)
{
	if (off && off >= img->strings_size)
		return image_fail(img, EINVAL, "%s: name offset %u is outside "
				  "the %llu-byte string table", what, off,
				  (unsigned long long)img->strings_size);
	return 0;
}

static int check_extent(struct ckpt_image *img, const struct ckpt_region *r,
			const struct ckpt_extent *e, uint64_t prev_end)
{
	uint64_t page = img->hdr.page_size;
	int err;

	if (e->addr % page || e->len % page || !e->len ||
	    (e->encoding == CKPT_EXTENT_RAW && e->file_offset % page))
		return image_fail(img, EINVAL, "memory %llx-%llx: extent is "
				  "empty or not page-aligned",
				  (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len));
	if (!range_inside(e->addr, e->len, r->start, r->end))
		return image_fail(img, EINVAL, "memory %llx-%llx lies outside "
				  "its region %llx-%llx",
				  (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len),
				  (unsigned long long)r->start,
				  (unsigned long long)r->end);
	if (e->encoding > CKPT_EXTENT_ZSTD || e->len > CKPT_EXTENT_MAX ||
	    (e->encoding == CKPT_EXTENT_RAW && e->stored_len != e->len) ||
	    (e->encoding == CKPT_EXTENT_ZSTD && !e->stored_len))
		return image_fail(img, EINVAL, "memory %llx-%llx: encoding %u "
				  "with %u stored bytes for %llu: the image is "
				  "corrupt", (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len),
				  e->encoding, e->stored_len,
				  (unsigned long long)e->len);
	/* ckpt_restart copies these itself, raw (image_writer.c) */
	if (e->encoding != CKPT_EXTENT_RAW &&
	    (r->kind == CKPT_REGION_ANON_SHARED || r->kind == CKPT_REGION_VDSO))
		return image_fail(img, EINVAL, "memory %llx-%llx: a %s region's "
				  "data is compressed",
				  (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len),
				  region_kind_name(r->kind));
	if (e->addr < prev_end)
		return image_fail(img, EINVAL, "memory %llx-%llx: extents "
				  "overlap or are out of order",
				  (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len));
	err = image_check_extent_source(img, r, e);
	if (err)
		return err;
	if (!e->source &&
	    !range_inside(e->file_offset, e->stored_len, img->hdr.data_offset,
			  img->hdr.image_size))
		return image_fail(img, EINVAL, "memory %llx-%llx: its data "
				  "(%llu bytes at offset %llu) lies outside the "
				  "image's data area",
				  (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len),
				  (unsigned long long)e->stored_len,
				  (unsigned long long)e->file_offset);
	return 0;
}

static int check_region(struct ckpt_image *img, const struct ckpt_region *r,
			uint64_t prev_end)
{
	uint64_t page = img->hdr.page_size, i, prev = 0;
	const char *kind = region_kind_name(r->kind);
	char what[80];
	int err;

	snprintf(what, sizeof(what), "region %llx-%llx",
		 (unsigned long long)r->start, (unsigned long long)r->end);
	if (r->start % page || r->end % page || r->start >= r->end)
		return image_fail(img, EINVAL, "%s: empty or not page-aligned",
				  what);
	if (r->start < prev_end)
		return image_fail(img, EINVAL, "%s: regions overlap or are out "
				  "of order", what);
	if (!kind)
		return image_fail(img, EINVAL, "%s: unknown kind %u", what,
				  r->kind);
	if (r->prot & ~(uint32_t)(PROT_READ | PROT_WRITE | PROT_EXEC))
		return image_fail(img, EINVAL, "%s: bad protection %#x", what,
				  r->prot);
	if (r->flags & ~(uint32_t)(CKPT_REGION_F_GROWSDOWN |
				   CKPT_REGION_F_NORESERVE))
		return image_fail(img, EINVAL, "%s: unknown flags %#x", what,
				  r->flags);
	err = check_name(img, r->name, what);
	if (err)
		return err;
	if ((region_is_file(r) || region_is_special(r)) &&
	    !*image_string(img, r->name))
		return image_fail(img, EINVAL, "%s: %s region without a name",
				  what, kind);
	if (region_is_file(r) && r->file_offset % page)
		return image_fail(img, EINVAL, "%s: file offset %llu is not "
				  "page-aligned", what,
				  (unsigned long long)r->file_offset);
	/* The vdso's code is saved (for a restart on another kernel), its
	 * data pages never are. */
	if (region_is_special(r) && r->kind != CKPT_REGION_VDSO &&
	    r->nextents)
		return image_fail(img, EINVAL, "%s: a %s region carries data",
				  what, kind);
	if (r->first_extent > img->hdr.nextents ||
	    r->nextents > img->hdr.nextents - r->first_extent)
		return image_fail(img, EINVAL, "%s: its extents lie outside the "
				  "extent table", what);
	for (i = 0; i < r->nextents; i++) {
		const struct ckpt_extent *e = &img->extents[r->first_extent + i];

		err = check_extent(img, r, e, prev);
		if (err)
			return err;
		prev = e->addr + e->len;
	}
	return 0;
}

#define FILE_FLAGS_KNOWN (CKPT_FILE_F_WRITTEN | CKPT_FILE_F_MAPPED_SHARED | \
			  CKPT_FILE_F_TEMPORARY | CKPT_FILE_F_SAVE_FILES | \
			  CKPT_FILE_F_SAVED | CKPT_FILE_F_CONTENT | \
			  CKPT_FILE_F_TOO_LARGE)

static int check_file_record(struct ckpt_image *img,
			     const struct ckpt_file_record *f)
{
	const struct ckpt_image_header *h = &img->hdr;
	int err = check_name(img, f->path, "file record");

	if (err)
		return err;
	if (!*image_string(img, f->path))
		return image_fail(img, EINVAL, "file record without a path");
	if (f->flags & ~(uint32_t)FILE_FLAGS_KNOWN)
		return image_fail(img, EINVAL, "file %s: unknown flags %#x",
				  image_string(img, f->path), f->flags);
	if ((f->flags & CKPT_FILE_F_CONTENT) &&
	    !range_inside(f->data_offset, f->size, h->data_offset,
			  h->image_size))
		return image_fail(img, EINVAL, "file %s: saved content lies "
				  "outside the image's data area",
				  image_string(img, f->path));
	return 0;
}

static int check_tables(struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;
	uint64_t prev_end = 0;
	char what[64];
	uint32_t i;
	int err;

	err = image_check_link_table(img);
	if (err)
		return err;
	for (i = 0; i < h->nregions; i++) {
		err = check_region(img, &img->regions[i], prev_end);
		if (err)
			return err;
		prev_end = img->regions[i].end;
	}
	for (i = 0; i < h->nextents; i++) {
		const struct ckpt_extent *e = &img->extents[i];

		if (!e->source &&
		    !range_inside(e->file_offset, e->stored_len,
				  h->data_offset, h->image_size))
			return image_fail(img, EINVAL, "extent %u: its data "
					  "lies outside the image's data area",
					  i);
	}
	for (i = 0; i < h->nfds; i++) {
		const struct ckpt_fd_info *f = &img->fds[i];

		snprintf(what, sizeof(what), "fd %d", f->fd);
		err = check_name(img, f->path, what);
		if (err)
			return err;
		/* An empty deleted file (or a second fd on one) carries no
		 * bytes and no offset: nothing to read, nothing to check. */
		if (f->data_size &&
		    !range_inside(f->data_offset, f->data_size,
				  h->data_offset, h->image_size))
			return image_fail(img, EINVAL, "%s: saved content lies "
					  "outside the image's data area",
					  what);
	}
	for (i = 0; i < h->nfiles; i++) {
		err = check_file_record(img, &img->files[i]);
		if (err)
			return err;
	}
	return image_check_fields(img);
}

static const char *file_kind_name(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "not a file";
}

int image_open(struct ckpt_image *img, const char *path, int open_flags)
{
	struct stat st;
	int err;

	memset(img, 0, sizeof(*img));
	img->path = path;
	for (int i = 0; i < CKPT_LINKS_MAX; i++)
		img->link_fds[i] = -1;
	/* O_NONBLOCK: opening a FIFO for reading must not wait for a
	 * writer; anything but a regular file is refused right after. */
	img->fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | open_flags);
	if (img->fd < 0)
		return image_fail(img, errno, "cannot open: %s",
				  strerror(errno));
	if (fstat(img->fd, &st))
		return image_fail(img, errno, "cannot stat: %s",
				  strerror(errno));
	if (!S_ISREG(st.st_mode))
		return image_fail(img, EINVAL, "not a regular file (%s)",
				  file_kind_name(st.st_mode));
	if (fcntl(img->fd, F_SETFL, 0) < 0)
		return image_fail(img, errno, "cannot clear O_NONBLOCK: %s",
				  strerror(errno));
	img->file_size = st.st_size;
	err = check_header(img);
	if (!err)
		err = check_sizes(img);
	if (!err)
		err = read_meta(img);
	if (!err)
		err = find_tables(img);
	if (!err)
		err = check_tables(img);
	if (!err)
		err = image_open_links(img);
	return err;
}

void image_close(struct ckpt_image *img)
{
	image_forget_records(img);
	if (img->fd >= 0)
		close(img->fd);
	img->fd = -1;
	image_close_links(img);
	free(img->meta);
	img->meta = NULL;
}

/* ckpt_hash64 cannot be fed in pieces: hash each extent in one buffer,
 * read for small extents, mapped for large ones. */
#define VERIFY_READ_MAX	(64ULL << 20)

/* A compressed extent: read, decompressed into buf (len bytes) and
 * hashed; a frame that does not decode to len bytes is named. */
static int zstd_extent_hash(struct ckpt_image *img,
			    const struct ckpt_extent *e, void *buf,
			    uint64_t *hash)
{
	void *stored = malloc(e->stored_len);
	size_t n;
	int err;

	if (!stored)
		return image_fail(img, ENOMEM, "no memory to decompress memory "
				  "%llx-%llx", (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len));
	err = image_read_at(img, image_extent_fd(img, e), stored, e->stored_len,
			    e->file_offset, "compressed extent data");
	n = err ? 0 : ZSTD_decompress(buf, e->len, stored, e->stored_len);
	free(stored);
	if (err)
		return err;
	if (ZSTD_isError(n) || n != e->len)
		return image_fail(img, EINVAL, "memory %llx-%llx: decompressing "
				  "its data failed (zstd: %s): the saved data "
				  "is corrupt", (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len),
				  ZSTD_isError(n) ? ZSTD_getErrorName(n) :
						    "wrong size");
	*hash = ckpt_extent_hash(e, buf);
	return 0;
}

static int extent_hash(struct ckpt_image *img, const struct ckpt_extent *e,
		       void *buf, uint64_t *hash)
{
	void *p;
	int err;

	if (e->encoding == CKPT_EXTENT_ZSTD)
		return zstd_extent_hash(img, e, buf, hash);
	if (e->len <= VERIFY_READ_MAX) {
		err = image_read_at(img, image_extent_fd(img, e), buf, e->len,
				    e->file_offset, "extent data");
		if (!err)
			*hash = ckpt_extent_hash(e, buf);
		return err;
	}
	p = mmap(NULL, e->len, PROT_READ, MAP_PRIVATE, image_extent_fd(img, e),
		 e->file_offset);
	if (p == MAP_FAILED)
		return image_fail(img, errno, "memory %llx-%llx: mapping its "
				  "data failed: %s",
				  (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len),
				  strerror(errno));
	*hash = ckpt_extent_hash(e, p);
	munmap(p, e->len);
	return 0;
}

/* Hash content saved with a file or fd record as their data_hash says;
 * buf holds CKPT_FILE_HASH_CHUNK bytes. */
int image_content_hash(struct ckpt_image *img, uint64_t off, uint64_t size,
		       char *buf, uint64_t *hash)
{
	uint64_t done = 0;
	int err;

	*hash = 0;
	while (done < size) {
		size_t n = size - done < CKPT_FILE_HASH_CHUNK ?
			   size - done : CKPT_FILE_HASH_CHUNK;

		err = read_exact(img, buf, n, off + done,
				 "saved file content");
		if (err)
			return err;
		*hash = ckpt_hash64(buf, n, *hash);
		done += n;
	}
	return 0;
}

static int verify_file_contents(struct ckpt_image *img, char *buf)
{
	uint64_t hash;
	int err = 0;

	for (uint32_t i = 0; i < img->hdr.nfiles && !err; i++) {
		const struct ckpt_file_record *f = &img->files[i];

		if (!(f->flags & CKPT_FILE_F_CONTENT))
			continue;
		err = image_content_hash(img, f->data_offset, f->size, buf,
					 &hash);
		if (!err && hash != f->data_hash)
			err = image_fail(img, EINVAL, "file %s: checksum "
					 "mismatch: the saved content is "
					 "corrupt", image_string(img, f->path));
	}
	return err;
}

/* The content of a deleted file, the bytes in flight of a pipe, FIFO or
 * socket: ckpt_restart and libckpt copy it as it is. */
static int verify_fd_contents(struct ckpt_image *img, char *buf)
{
	uint64_t hash;
	int err = 0;

	for (uint32_t i = 0; i < img->hdr.nfds && !err; i++) {
		const struct ckpt_fd_info *f = &img->fds[i];

		if (!f->data_size)
			continue;
		err = image_content_hash(img, f->data_offset, f->data_size,
					 buf, &hash);
		if (!err && hash != f->data_hash)
			err = image_fail(img, EINVAL, "fd %d (%s %s): checksum "
					 "mismatch: the content saved with it "
					 "is corrupt", f->fd,
					 fd_kind_name(f->kind) ?: "?",
					 image_string(img, f->path));
	}
	return err;
}

static int verify_extent(struct ckpt_image *img, const struct ckpt_extent *e,
			 void *buf)
{
	uint64_t hash = 0;
	int err = extent_hash(img, e, buf, &hash);

	if (!err && hash != e->hash)
		err = image_fail(img, EINVAL, "memory %llx-%llx: checksum "
				 "mismatch: the saved data%s%s is corrupt",
				 (unsigned long long)e->addr,
				 (unsigned long long)(e->addr + e->len),
				 e->source ? " in chain link " : "",
				 e->source ? image_string(img,
				 img->links[e->source - 1].name) : "");
	return err;
}

/* Shared memory objects: ckpt_restart copies their pages into one memfd
 * (restart_shm.c); the loader never sees them. */
static int verify_shared_memory(struct ckpt_image *img, void *buf)
{
	int err = 0;

	for (uint32_t i = 0; i < img->hdr.nregions && !err; i++) {
		const struct ckpt_region *r = &img->regions[i];

		if (r->kind != CKPT_REGION_ANON_SHARED)
			continue;
		for (uint32_t k = 0; k < r->nextents && !err; k++)
			err = verify_extent(img,
					    &img->extents[r->first_extent + k],
					    buf);
	}
	return err;
}

/* Room for the largest extent read whole and for one content chunk. */
static void *verify_buffer(const struct ckpt_image *img)
{
	uint64_t size = CKPT_FILE_HASH_CHUNK;

	for (uint32_t i = 0; i < img->hdr.nextents; i++)
		if (img->extents[i].len > size)
			size = img->extents[i].len;
	return malloc(size < VERIFY_READ_MAX ? size : VERIFY_READ_MAX);
}

int image_verify_restart_data(struct ckpt_image *img)
{
	char *buf = verify_buffer(img);
	int err;

	if (!buf)
		return image_fail(img, ENOMEM, "no memory to verify the data");
	err = verify_fd_contents(img, buf);
	if (!err)
		err = verify_shared_memory(img, buf);
	free(buf);
	return err;
}

int image_verify_data(struct ckpt_image *img)
{
	char *buf = verify_buffer(img);
	uint32_t i;
	int err = 0;

	if (!buf)
		return image_fail(img, ENOMEM, "no memory to verify the data");
	for (i = 0; i < img->hdr.nextents && !err; i++)
		err = verify_extent(img, &img->extents[i], buf);
	if (!err)
		err = verify_fd_contents(img, buf);
	if (!err)
		err = verify_file_contents(img, buf);
	free(buf);
	return err;
}

/* --- can this machine restart it ------------------------------------ */

/* The flags of this image's record of path, 0 if none. */
static uint32_t file_flags(const struct ckpt_image *img, const char *path)
{
	for (uint32_t i = 0; i < img->hdr.nfiles; i++)
		if (!strcmp(image_string(img, img->files[i].path), path))
			return img->files[i].flags;
	return 0;
}

static int check_region_file(struct ckpt_image *img,
			     const struct ckpt_region *r)
{
	const char *path = image_string(img, r->name);
	uint64_t mtime;
	struct stat st;

	/* put back by ckpt_restart before the processes are restored
	 * (restart_tmpfiles.c) */
	if (r->kind == CKPT_REGION_FILE_SHARED &&
	    (file_flags(img, path) & CKPT_FILE_F_SAVED))
		return 0;
	if (stat(path, &st))
		return image_fail(img, errno, "mapped file %s (region "
				  "%llx-%llx): %s%s", path,
				  (unsigned long long)r->start,
				  (unsigned long long)r->end, strerror(errno),
				  file_flags(img, path) & CKPT_FILE_F_TOO_LARGE ?
				  " (its content was not saved: over the "
				  "temporary-file limit, ckpt_launch "
				  "--tmp-file-max)" : "");
	mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
		st.st_mtim.tv_nsec;
	/* A writable shared mapping is the program's live data: it changes
	 * the file itself after the checkpoint, so only its size must hold
	 * (pages past a shorter end would fault). */
	if (r->kind == CKPT_REGION_FILE_SHARED && (r->prot & PROT_WRITE))
		mtime = r->file_mtime_ns;
	if ((uint64_t)st.st_size != r->file_size || mtime != r->file_mtime_ns)
		return image_fail(img, ESTALE, "mapped file %s changed since "
				  "the checkpoint (size %llu, was %llu; mtime "
				  "%s)", path, (unsigned long long)st.st_size,
				  (unsigned long long)r->file_size,
				  mtime == r->file_mtime_ns ? "unchanged" :
				  "differs");
	return 0;
}

static bool image_has_specials(const struct ckpt_image *img)
{
	uint32_t i;

	for (i = 0; i < img->hdr.nregions; i++)
		if (region_is_special(&img->regions[i]))
			return true;
	return false;
}

struct special_map {
	char name[32];
	uint64_t start, end;
};

/* This kernel's [vvar]/[vvar_vclock]/[vdso]... set from our own maps. */
static int read_specials(struct special_map *out, int cap)
{
	char line[512], name[256];
	unsigned long long start, end;
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && n < cap) {
		name[0] = '\0';
		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %255s", &start,
			   &end, name) < 2)
			continue;
		if (strncmp(name, "[v", 2) || !strcmp(name, "[vsyscall]"))
			continue;
		snprintf(out[n].name, sizeof(out[n].name), "%s", name);
		out[n].start = start;
		out[n].end = end;
		n++;
	}
	fclose(f);
	return n;
}

static const struct ckpt_region *image_vdso(const struct ckpt_image *img)
{
	uint32_t i;

	for (i = 0; i < img->hdr.nregions; i++)
		if (img->regions[i].kind == CKPT_REGION_VDSO)
			return &img->regions[i];
	return NULL;
}

int image_has_compressed_extents(const struct ckpt_image *img)
{
	for (uint32_t i = 0; i < img->hdr.nextents; i++)
		if (img->extents[i].encoding != CKPT_EXTENT_RAW)
			return 1;
	return 0;
}

uint64_t image_vdso_code_size(const struct ckpt_image *img)
{
	const struct ckpt_region *r = image_vdso(img);

	return r && r->nextents ? r->end - r->start : 0;
}

/* The saved vdso code, hash-checked, in a malloc'd buffer of the region's
 * size (pages without data stay zero). */
static int read_vdso_code(struct ckpt_image *img, const struct ckpt_region *r,
			  unsigned char **out)
{
	uint64_t len = r->end - r->start, i;
	unsigned char *buf;
	int err;

	if (len > VDSO_CODE_MAX)
		return image_fail(img, EINVAL, "region %llx-%llx: a saved vdso "
				  "of %llu bytes is implausibly large: the "
				  "image is corrupt", (unsigned long long)r->start,
				  (unsigned long long)r->end,
				  (unsigned long long)len);
	buf = calloc(1, len);
	if (!buf)
		return image_fail(img, ENOMEM, "no memory for the saved vdso");
	for (i = 0; i < r->nextents; i++) {
		const struct ckpt_extent *e = &img->extents[r->first_extent + i];

		err = read_exact(img, buf + (e->addr - r->start), e->len,
				 e->file_offset, "saved vdso");
		if (!err && ckpt_extent_hash(e, buf + (e->addr - r->start))
		    != e->hash)
			err = image_fail(img, EINVAL, "memory %llx-%llx: checksum "
					 "mismatch: the saved data is corrupt",
					 (unsigned long long)e->addr,
					 (unsigned long long)(e->addr + e->len));
		if (err) {
			free(buf);
			return err;
		}
	}
	*out = buf;
	return 0;
}

/* Same names, sizes and offsets relative to the lowest one; else the
 * image's special region that has no match here. */
static const struct ckpt_region *layout_difference(struct ckpt_image *img,
						   const struct special_map *cur,
						   int n)
{
	uint64_t base = 0;
	uint32_t i, count = 0;
	int j;

	for (i = 0; i < img->hdr.nregions; i++)
		if (region_is_special(&img->regions[i]) && !count++)
			base = img->regions[i].start;
	for (i = 0; i < img->hdr.nregions; i++) {
		const struct ckpt_region *r = &img->regions[i];
		const char *name = image_string(img, r->name);

		if (!region_is_special(r))
			continue;
		for (j = 0; j < n && strcmp(cur[j].name, name); j++)
			;
		if (j == n || (int)count != n ||
		    cur[j].end - cur[j].start != r->end - r->start ||
		    cur[j].start - cur[0].start != r->start - base)
			return r;
	}
	return NULL;
}

static bool same_vdso_code(const unsigned char *code, uint64_t len,
			   const struct special_map *cur, int n)
{
	int j;

	for (j = 0; j < n; j++)
		if (!strcmp(cur[j].name, "[vdso]"))
			return cur[j].end - cur[j].start == len &&
			       !memcmp((const void *)(uintptr_t)cur[j].start,
				       code, len);
	return false;
}

/*
 * The loader decides the same again (restart/loader/vdso.c); deciding
 * here gives the answer before anything was torn down. Same kernel: the
 * same set of special mappings and, if the image carries the old vdso's
 * code, the same bytes. Otherwise the old entry points are redirected,
 * which needs the old code.
 */
int image_check_vdso(struct ckpt_image *img)
{
	const struct ckpt_region *diff, *vdso = image_vdso(img);
	struct special_map cur[8];
	unsigned char *code = NULL;
	int n, err;

	img->vdso_redirect = false;
	if (!image_has_specials(img))
		return 0;
	n = read_specials(cur, 8);
	if (n < 0)
		return image_fail(img, -n, "reading /proc/self/maps failed: %s",
				  strerror(-n));
	if (vdso && vdso->nextents) {
		err = read_vdso_code(img, vdso, &code);
		if (err)
			return err;
	}
	diff = layout_difference(img, cur, n);
	if (!diff && code && !same_vdso_code(code, vdso->end - vdso->start,
					     cur, n))
		diff = vdso;
	free(code);
	if (!diff)
		return 0;
	if (vdso && !vdso->nextents)
		return image_fail(img, ENOTSUP, "vdso layout differs from the "
				  "checkpointing kernel: %s of %llu bytes has "
				  "no match here, and the image carries no vdso "
				  "code (made by an older ckpt) to redirect",
				  image_string(img, diff->name),
				  (unsigned long long)(diff->end - diff->start));
	img->vdso_redirect = true;
	return 0;
}

int image_check_host(struct ckpt_image *img, unsigned flags)
{
	const struct ckpt_image_header *h = &img->hdr;
	char why[512];
	uint32_t i;
	int err;

	img->warning[0] = '\0';
	if (h->arch != restart_arch_id())
		return image_fail(img, ENOEXEC, "image is for %s, this machine "
				  "is %s", arch_name(h->arch),
				  arch_name(restart_arch_id()));
	if (h->page_size != (uint32_t)sysconf(_SC_PAGESIZE))
		return image_fail(img, ENOEXEC, "image page size %u, this system "
				  "uses %ld", h->page_size,
				  sysconf(_SC_PAGESIZE));
	err = restart_arch_check_cpu(h, flags & IMAGE_CPU_COMPAT, why,
				     sizeof(why), img->warning,
				     sizeof(img->warning));
	if (err)
		return image_fail(img, -err, "%s", why);
	for (i = 0; i < h->nregions; i++) {
		if (!region_is_file(&img->regions[i]))
			continue;
		err = check_region_file(img, &img->regions[i]);
		if (err)
			return err;
	}
	return image_check_vdso(img);
}
