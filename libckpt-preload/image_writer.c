/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writing an image (format: include/ckpt/image.h). The tables are built in
 * mmap'd arrays (no malloc while threads are stopped), the data is written
 * sequentially in extents of at most CKPT_EXTENT_MAX bytes, each hashed
 * (and with compression made a zstd frame, extent_encode.c) just before
 * it is written, and the metadata and header last. The file
 * is a temporary one; image_sync() fsyncs it after the application has
 * resumed and image_commit() (image_temporaries.c) renames it over the
 * previous image once every process of the checkpoint is synced
 * (two-phase commit), so the previous image survives any crash and any
 * failed checkpoint.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/hash.h"
#include "ckpt/image_names.h"
#include "image_chain.h"
#include "image_writer.h"
#include "internal.h"

#define PAGE 4096UL

int table_reserve(struct table *t, size_t more)
{
	size_t need = (t->n + more) * t->elem, cap;
	void *p;

	if (need <= t->cap * t->elem)
		return 0;
	cap = t->cap ? t->cap * 2 : 1024;
	while (cap * t->elem < need)
		cap *= 2;
	if (t->base)
		p = mremap(t->base, t->cap * t->elem, cap * t->elem,
			   MREMAP_MAYMOVE);
	else
		p = mmap(NULL, cap * t->elem, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	t->base = p;
	t->cap = cap;
	return 0;
}

void *table_push(struct table *t)
{
	if (table_reserve(t, 1) < 0)
		return NULL;
	return t->base + t->elem * t->n++;
}

void table_free(struct table *t)
{
	if (t->base)
		munmap(t->base, t->cap * t->elem);
	t->base = NULL;
	t->n = t->cap = 0;
}

/* Offset of a copy of s in the string table; 0 is the empty string. */
int add_string(struct image_writer *w, const char *s, uint32_t *off)
{
	size_t len = strlen(s) + 1;

	if (w->strings.n == 0) {
		if (table_reserve(&w->strings, 1) < 0)
			return -ENOMEM;
		w->strings.base[w->strings.n++] = 0;
	}
	if (!*s) {
		*off = 0;
		return 0;
	}
	if (table_reserve(&w->strings, len) < 0)
		return -ENOMEM;
	*off = w->strings.n;
	memcpy(w->strings.base + w->strings.n, s, len);
	w->strings.n += len;
	return 0;
}

/*
 * The NUL-separated strings of /proc/self/cmdline or environ, as ps shows
 * them, copied into the string table (at most PROC_STRINGS_MAX bytes, cut
 * after a whole string). Not fatal: a process without them (the file
 * unreadable, or empty after a restart that could not keep them) saves
 * none and is restarted with its program name alone.
 */
#define PROC_STRINGS_MAX	(2U << 20)

static int add_proc_strings(struct image_writer *w, const char *path,
			    uint32_t *off, uint32_t *size)
{
	uint32_t unused, len = 0;
	char *dst;
	ssize_t n;
	int fd, r;

	*off = *size = 0;
	r = add_string(w, "", &unused);		/* offset 0 stays "" */
	if (r < 0 || table_reserve(&w->strings, PROC_STRINGS_MAX + 1) < 0)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	dst = w->strings.base + w->strings.n;
	while (len < PROC_STRINGS_MAX &&
	       (n = read(fd, dst + len, PROC_STRINGS_MAX - len)) > 0)
		len += n;
	close(fd);
	if (len == PROC_STRINGS_MAX)
		while (len && dst[len - 1])
			len--;
	if (!len)
		return 0;
	if (dst[len - 1])	/* a program that rewrote its argv area */
		dst[len++] = 0;
	*off = w->strings.n;
	*size = len;
	w->strings.n += len;
	return 0;
}

static int add_command_line(struct image_writer *w)
{
	int r = add_proc_strings(w, "/proc/self/cmdline", &w->cmdline,
				 &w->cmdline_size);

	if (r == 0)
		r = add_proc_strings(w, "/proc/self/environ", &w->environment,
				     &w->environment_size);
	return r;
}

int writer_add_region(struct image_writer *w, const struct ckpt_region *r,
		      const char *name)
{
	struct ckpt_region *slot = table_push(&w->regions);

	if (!slot)
		return -ENOMEM;
	*slot = *r;
	slot->first_extent = w->extents.n;
	slot->nextents = 0;
	return add_string(w, name, &slot->name);
}

/* Whether a region's extents may be compressed: those the restart
 * loader restores. ckpt_restart copies shared memory objects and reads
 * the old vdso itself (restart_shm.c, image_check.c): raw. */
static int region_compressible(const struct ckpt_region *r)
{
	return r->kind != CKPT_REGION_ANON_SHARED &&
	       r->kind != CKPT_REGION_VDSO;
}

/* Extents belong to the last region added; long runs are split so each
 * is hashed while it is still in the cache. Until written, encoding says
 * whether the extent may be compressed (extent_encode.c). */
int writer_add_extent(struct image_writer *w, uint64_t addr, uint64_t len)
{
	struct ckpt_region *r;

	if (w->regions.n == 0)
		return -EINVAL;
	r = (struct ckpt_region *)w->regions.base + w->regions.n - 1;
	while (len) {
		uint64_t chunk = len < CKPT_EXTENT_MAX ? len : CKPT_EXTENT_MAX;
		struct ckpt_extent *e = table_push(&w->extents);

		if (!e)
			return -ENOMEM;
		memset(e, 0, sizeof(*e));
		e->addr = addr;
		e->len = chunk;
		e->encoding = region_compressible(r) ? CKPT_EXTENT_ZSTD :
						       CKPT_EXTENT_RAW;
		r->nextents++;
		addr += chunk;
		len -= chunk;
	}
	return 0;
}

int writer_add_fd(struct image_writer *w, const struct ckpt_fd_info *fi,
		  const char *path, int content_fd, uint64_t content_size)
{
	struct ckpt_fd_info *slot = table_push(&w->fds);
	struct blob *b;

	if (!slot)
		return -ENOMEM;
	*slot = *fi;
	slot->data_offset = 0;
	slot->data_size = 0;
	/* without content, data_hash may hold a share group
	 * (CKPT_FDF_SHARED_EVENT) */
	if (content_fd >= 0) {
		slot->data_hash = 0;
		b = table_push(&w->blobs);
		if (!b)
			return -ENOMEM;
		b->fd = content_fd;
		b->mem = NULL;
		b->size = content_size;
		b->index = w->fds.n - 1;
		b->is_file = 0;
	}
	return add_string(w, path, &slot->path);
}

/* An fd record whose content is size bytes at mem, which stays as it is
 * until the image is written: no descriptor to make and read (a socket's
 * record, thousands of them with many connections). */
int writer_add_fd_bytes(struct image_writer *w, const struct ckpt_fd_info *fi,
			const char *path, const void *mem, uint64_t size)
{
	struct blob *b;
	int r = writer_add_fd(w, fi, path, -1, 0);

	if (r < 0)
		return r;
	b = table_push(&w->blobs);
	if (!b)
		return -ENOMEM;
	((struct ckpt_fd_info *)w->fds.base)[w->fds.n - 1].data_hash = 0;
	*b = (struct blob){ .fd = -1, .mem = mem, .size = size,
			    .index = w->fds.n - 1, .is_file = 0 };
	return 0;
}

/* A file record; with content_fd >= 0, f->size bytes of content read
 * from it (CKPT_FILE_F_CONTENT). */
int writer_add_file(struct image_writer *w, const struct ckpt_file_record *f,
		    const char *path, int content_fd)
{
	struct ckpt_file_record *slot = table_push(&w->files);
	struct blob *b;

	if (!slot)
		return -ENOMEM;
	*slot = *f;
	slot->data_offset = 0;
	slot->data_hash = 0;
	if (content_fd >= 0) {
		b = table_push(&w->blobs);
		if (!b)
			return -ENOMEM;
		b->fd = content_fd;
		b->mem = NULL;
		b->size = f->size;
		b->index = w->files.n - 1;
		b->is_file = 1;
	}
	return add_string(w, path, &slot->path);
}

int writer_reserve_memory_tables(struct image_writer *w)
{
	if (table_reserve(&w->regions, 1 << 16) < 0 ||
	    table_reserve(&w->extents, 1 << 21) < 0)
		return -ENOMEM;
	return 0;
}

void writer_set_brk(struct image_writer *w, uint64_t start, uint64_t end)
{
	w->brk_start = start;
	w->brk_end = end;
	w->has_brk = 1;
}

/* Each thread's name, NUL-terminated, in thread-record order (an
 * unnamed thread's is a lone NUL, unlike add_string's ""). */
static int add_thread_name(struct image_writer *w, const char *name)
{
	size_t len = strnlen(name, 15) + 1;
	uint32_t unused;

	if (add_string(w, "", &unused) < 0 ||	/* offset 0 stays "" */
	    table_reserve(&w->strings, len) < 0)
		return -ENOMEM;
	if (!w->thread_names_size)
		w->thread_names = w->strings.n;
	memcpy(w->strings.base + w->strings.n, name, len - 1);
	w->strings.base[w->strings.n + len - 1] = 0;
	w->strings.n += len;
	w->thread_names_size += len;
	return 0;
}

static int add_threads(struct image_writer *w)
{
	for (int i = 0; i <= threads_count(); i++) {
		const struct ckpt_thread *t = threads_get(i);
		struct ckpt_thread_info *ti = table_push(&w->threads);

		if (!ti || add_thread_name(w, t->name) < 0)
			return -ENOMEM;
		if (t->is_manager)
			w->manager_vtid = t->vtid;
		ti->vtid = t->vtid;
		ti->is_main = t->is_main;
		ti->tls = t->tls;
		ti->sp = t->is_manager ? t->ctx.sp : t->sp;
		ti->pc = t->is_manager ? t->ctx.pc : t->pc;
	}
	return 0;
}

int write_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

int pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
{
	while (n > 0) {
		ssize_t done = pwritev(fd, iov, n, (off_t)off);

		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0)
			return done < 0 ? -errno : -EIO;
		off += (uint64_t)done;
		while (n > 0 && (size_t)done >= iov->iov_len) {
			done -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {	/* a short write: the rest of this one */
			iov->iov_base = (char *)iov->iov_base + done;
			iov->iov_len -= (size_t)done;
		}
	}
	return 0;
}

static uint64_t page_align(uint64_t x)
{
	return (x + PAGE - 1) & ~(PAGE - 1);
}

/* The metadata block's place, from off on, and the table counts. */
static void lay_out_meta(struct image_writer *w, struct ckpt_image_header *h,
			 uint64_t off)
{
	h->nregions = w->regions.n;
	h->nextents = w->extents.n;
	h->nthreads = w->threads.n;
	h->nfds = w->fds.n;
	h->nfiles = w->files.n;
	h->nlinks = w->links.n;
	h->meta_offset = off;
	h->regions_offset = off;
	off += w->regions.n * sizeof(struct ckpt_region);
	h->extents_offset = off;
	off += w->extents.n * sizeof(struct ckpt_extent);
	h->threads_offset = off;
	off += w->threads.n * sizeof(struct ckpt_thread_info);
	h->fds_offset = off;
	off += w->fds.n * sizeof(struct ckpt_fd_info);
	h->files_offset = off;
	off += w->files.n * sizeof(struct ckpt_file_record);
	h->links_offset = w->links.n ? off : 0;
	off += w->links.n * sizeof(struct ckpt_image_link);
	h->signals_offset = w->signal_state.n ? off : 0;
	h->nthread_signals = w->thread_signals.n;
	off += w->signal_state.n * sizeof(struct ckpt_signal_state);
	off += w->thread_signals.n * sizeof(struct ckpt_thread_signals);
	h->strings_offset = off;
	h->strings_size = w->strings.n;
	off += w->strings.n;
	h->meta_size = off - h->meta_offset;
}

/* Every blob's place after the extents (which end at off): page-aligned,
 * except the small records kept in memory (socket records, thousands
 * with many connections), packed 8-aligned; returns the end of the
 * image. */
static uint64_t lay_out_blobs(struct image_writer *w, uint64_t off)
{
	struct blob *b = (struct blob *)w->blobs.base;
	struct ckpt_fd_info *fi = (struct ckpt_fd_info *)w->fds.base;
	struct ckpt_file_record *fr = (struct ckpt_file_record *)w->files.base;

	off = page_align(off);
	for (size_t i = 0; i < w->blobs.n; i++) {
		off = b[i].mem ? (off + 7) & ~7ULL : page_align(off);
		if (b[i].is_file) {
			fr[b[i].index].data_offset = off;
		} else {
			fi[b[i].index].data_offset = off;
			fi[b[i].index].data_size = b[i].size;
		}
		off += b[i].size;
	}
	return page_align(off);
}

/*
 * The extents in table order from data_offset on, each in the form the
 * encoder gives (raw: page-aligned, so a loader may map it; compressed:
 * packed after the previous one). Only into the page cache while the
 * application is stopped: the disk write (fsync) happens after it runs
 * again. *end: the first byte after the last extent.
 */
static int write_extents(struct image_writer *w, int fd, uint64_t off,
			 int compress, uint64_t *end, char *err, size_t errlen)
{
	struct ckpt_extent *e = (struct ckpt_extent *)w->extents.base;
	struct extent_encoder *x;
	const void *data;
	int r = extent_encoder_start(&x, e, w->extents.n, compress);

	for (size_t i = 0; i < w->extents.n && r == 0; i++) {
		r = extent_encoder_next(x, i, &e[i], &data);
		if (e[i].encoding == CKPT_EXTENT_RAW)
			off = page_align(off);
		e[i].file_offset = off;
		if (r == 0)
			r = write_all(fd, data, e[i].stored_len, off);
		off += e[i].stored_len;
		if (r < 0)
			ckpt_fmt(err, errlen,
				 "writing memory %#lx-%#lx: %s",
				 (unsigned long)e[i].addr,
				 (unsigned long)(e[i].addr + e[i].len),
				 strerror(-r));
	}
	if (r < 0 && !err[0])
		ckpt_fmt(err, errlen, "preparing to write memory: %s",
			 strerror(-r));
	extent_encoder_stop(x);
	*end = off;
	return r;
}

/* Fill buf with up to want bytes from fd at off; short only at EOF. */
static ssize_t read_chunk(int fd, char *buf, size_t want, uint64_t off)
{
	size_t got = 0;

	while (got < want) {
		ssize_t n = pread(fd, buf + got, want - got, off + got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += n;
	}
	return got;
}

/* Copy a blob in CKPT_FILE_HASH_CHUNK pieces (buf holds one), hashing
 * them as ckpt_file_record.data_hash (and ckpt_fd_info's) says. A file that shrank since its
 * size was taken fails the checkpoint (-EIO). */
static int copy_blob(int out, const struct blob *b, uint64_t off,
		     char *buf, uint64_t *hash)
{
	uint64_t done = 0;

	*hash = 0;
	while (done < b->size) {
		size_t want = b->size - done < CKPT_FILE_HASH_CHUNK ?
			      b->size - done : CKPT_FILE_HASH_CHUNK;
		const char *src = b->mem ? (const char *)b->mem + done : buf;
		ssize_t n = b->mem ? (ssize_t)want :
				     read_chunk(b->fd, buf, want, done);
		int r;

		if (n < 0)
			return n;
		if ((size_t)n < want)
			return -EIO;
		*hash = ckpt_hash64(src, n, *hash);
		r = write_all(out, src, n, off + done);
		if (r < 0)
			return r;
		done += n;
	}
	return 0;
}

static void blob_error(struct image_writer *w, const struct blob *b,
		       int r, char *err, size_t errlen)
{
	const struct ckpt_fd_info *fi = (const struct ckpt_fd_info *)w->fds.base;
	const struct ckpt_file_record *fr =
		(const struct ckpt_file_record *)w->files.base;

	if (b->is_file)
		ckpt_fmt(err, errlen, "saving the content of %s: %s",
			 w->strings.base + fr[b->index].path, strerror(-r));
	else
		ckpt_fmt(err, errlen, "saving the content saved with fd %d: %s",
			 fi[b->index].fd, strerror(-r));
}

static uint64_t *blob_hash(struct image_writer *w, const struct blob *b)
{
	struct ckpt_fd_info *fi = (struct ckpt_fd_info *)w->fds.base;
	struct ckpt_file_record *fr = (struct ckpt_file_record *)w->files.base;

	return b->is_file ? &fr[b->index].data_hash : &fi[b->index].data_hash;
}

static uint64_t blob_offset(struct image_writer *w, const struct blob *b)
{
	struct ckpt_fd_info *fi = (struct ckpt_fd_info *)w->fds.base;
	struct ckpt_file_record *fr = (struct ckpt_file_record *)w->files.base;

	return b->is_file ? fr[b->index].data_offset :
			    fi[b->index].data_offset;
}

/* The blobs in memory from b[i] on that fit in one buf (socket records,
 * a page each): assembled there with their gaps of zeros and written
 * with one pwrite (thousands of sockets: one per buf, not one each).
 * Returns how many were written, or -errno. */
static long write_memory_run(struct image_writer *w, int fd, size_t i,
			     char *buf)
{
	struct blob *b = (struct blob *)w->blobs.base;
	uint64_t base = blob_offset(w, &b[i]), end = base;
	size_t j = i;
	int r;

	for (; j < w->blobs.n && b[j].mem; j++) {
		uint64_t off = blob_offset(w, &b[j]);

		if (off + b[j].size - base > CKPT_FILE_HASH_CHUNK)
			break;
		memset(buf + (end - base), 0, off - end);
		memcpy(buf + (off - base), b[j].mem, b[j].size);
		*blob_hash(w, &b[j]) = ckpt_hash64(b[j].mem, b[j].size, 0);
		end = off + b[j].size;
	}
	if (j == i)	/* larger than buf: copied in pieces */
		return 0;
	r = write_all(fd, buf, end - base, base);
	return r < 0 ? r : (long)(j - i);
}

static int write_blobs(struct image_writer *w, int fd, char *err,
		       size_t errlen)
{
	struct blob *b = (struct blob *)w->blobs.base;
	char *buf;
	uint64_t hash = 0;
	int r = 0;

	if (w->blobs.n == 0)
		return 0;
	buf = mmap(NULL, CKPT_FILE_HASH_CHUNK, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return -ENOMEM;
	for (size_t i = 0; i < w->blobs.n && r == 0; i++) {
		long done = b[i].mem ? write_memory_run(w, fd, i, buf) : 0;

		if (done > 0) {
			i += done - 1;
			continue;
		}
		r = done < 0 ? (int)done :
		    copy_blob(fd, &b[i], blob_offset(w, &b[i]), buf, &hash);
		if (r < 0)
			blob_error(w, &b[i], r, err, errlen);
		else
			*blob_hash(w, &b[i]) = hash;
	}
	munmap(buf, CKPT_FILE_HASH_CHUNK);
	return r;
}

/* The metadata block, its tables one after the other, hashed as the
 * reader sees it; written from the tables themselves (no copy: fresh
 * memory for one costs a page fault per page). */
static int write_meta(struct image_writer *w, int fd,
		      struct ckpt_image_header *h)
{
	const struct table *parts[] = { &w->regions, &w->extents, &w->threads,
					&w->fds, &w->files, &w->links,
					&w->signal_state, &w->thread_signals,
					&w->strings };
	struct iovec iov[sizeof(parts) / sizeof(parts[0])];
	struct ckpt_hash_stream hs;
	int n = 0;

	ckpt_hash_stream_init(&hs, 0);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t len = parts[i]->n * parts[i]->elem;

		if (!len)
			continue;
		ckpt_hash_stream_update(&hs, parts[i]->base, len);
		iov[n++] = (struct iovec){ .iov_base = parts[i]->base,
					   .iov_len = len };
	}
	h->meta_hash = ckpt_hash_stream_final(&hs);
	return pwritev_all(fd, iov, n, h->meta_offset);
}

static void fill_header(struct ckpt_image_header *h, struct image_writer *w,
			uint64_t generation)
{
	struct timespec now;

	memcpy(h->magic, CKPT_IMAGE_MAGIC, 8);
	h->version = CKPT_IMAGE_VERSION;
	h->header_size = sizeof(*h);
	h->arch = arch_image_arch();
	h->page_size = PAGE;
	h->cpu_features = arch_cpu_features();
	h->cpu_features_in_use = threads_features_in_use();
	h->restore_entry = (uintptr_t)ckpt_restore_entry;
	h->restore_stack_top = ((uintptr_t)ckpt_restore_stack +
				ckpt_restore_stack_size) & ~15UL;
	h->restore_tls = threads_main_tls();
	if (w->has_brk) {
		h->flags |= CKPT_IMG_F_HAS_BRK;
		h->brk_start = w->brk_start;
		h->brk_end = w->brk_end;
	}
	h->flags |= session_image_flags();
	/* memory.c saves image-backed memory as anonymous memory */
	h->flags |= CKPT_IMG_F_MAPPABLE;
	h->vpid = ckpt.vpid;
	h->vppid = ckpt.vppid;
	h->generation = generation;
	h->computation_id = ckpt.computation_id;
	if (add_string(w, unrestored_text(), &h->unrestored) < 0)
		h->unrestored = 0;
	clock_gettime(CLOCK_REALTIME, &now);
	h->ckpt_time_ns = now.tv_sec * 1000000000ULL + now.tv_nsec;
	ckpt_fmt(h->program, sizeof(h->program), "%s", ckpt.program);
	ckpt_fmt(h->unique_id, sizeof(h->unique_id), "%s", ckpt.unique_id);
	h->cmdline = w->cmdline;
	h->cmdline_size = w->cmdline_size;
	h->environment = w->environment;
	h->environment_size = w->environment_size;
	h->thread_names = w->thread_names;
	h->thread_names_size = w->thread_names_size;
	h->manager_vtid = w->manager_vtid;
	h->ckpt_signal = ckpt.signal;
	h->round_members = ckpt.round_members;
	ckpt_fmt(h->round_host, sizeof(h->round_host), "%s", ckpt.hostname);
}

static int write_header(int fd, struct ckpt_image_header *h)
{
	char page[CKPT_HEADER_SIZE];

	h->header_hash = 0;
	h->header_hash = ckpt_hash64(h, sizeof(*h), 0);
	memset(page, 0, sizeof(page));
	memcpy(page, h, sizeof(*h));
	return write_all(fd, page, sizeof(page), 0);
}

static void writer_free(struct image_writer *w)
{
	table_free(&w->regions);
	table_free(&w->extents);
	table_free(&w->threads);
	table_free(&w->fds);
	table_free(&w->files);
	table_free(&w->strings);
	table_free(&w->blobs);
	table_free(&w->links);
	table_free(&w->signal_state);
	table_free(&w->thread_signals);
}

/* scan_memory 0: every table but the memory's (a snapshot's template
 * scans its own copy when an image is asked of it). */
static int build_tables(struct image_writer *w, int scan_memory, char *err,
			size_t errlen)
{
	int r;

	for (size_t i = 0; i < ckpt_nresources; i++) {
		if (!ckpt_resources[i]->write)
			continue;
		r = ckpt_resources[i]->write(w);
		if (r < 0) {
			const char *where = round_claim_failure();

			ckpt_fmt(err, errlen, "recording %s: %s%s%s",
				 ckpt_resources[i]->name, where,
				 where[0] ? ": " : "", strerror(-r));
			return r;
		}
	}
	r = add_command_line(w);
	if (r < 0) {
		ckpt_fmt(err, errlen, "recording the command line: %s",
			 strerror(-r));
		return r;
	}
	r = add_threads(w);
	if (r < 0) {
		ckpt_fmt(err, errlen, "recording threads: %s", strerror(-r));
		return r;
	}
	/* Memory last: the tables above live in memory it scans. */
	return scan_memory ? memory_scan(w, err, errlen) : 0;
}

/* The memory of a plain image: the metadata first, then the extents
 * from the next page on. */
static int write_plain_memory(struct image_writer *w, int fd,
			      struct ckpt_image_header *h, int compress,
			      uint64_t *end, char *err, size_t errlen)
{
	lay_out_meta(w, h, CKPT_HEADER_SIZE);
	h->data_offset = page_align(h->meta_offset + h->meta_size);
	chain_write_plain();
	return write_extents(w, fd, h->data_offset, compress, end, err,
			     errlen);
}

/* A failure while writing names the file (a full disk: which one). */
static void name_the_image(char *err, size_t errlen, const char *tmp_path)
{
	char what[512];

	if (!err[0] || strstr(err, tmp_path))
		return;
	ckpt_fmt(what, sizeof(what), "%s", err);
	ckpt_fmt(err, errlen, "%s: %s", tmp_path, what);
}

/* Write the whole image into tmp_path (a new file beside final_path).
 * Called with every other thread stopped. An incremental image has its
 * metadata last: its extent table is known once the data is written. */
static int write_image_file(struct image_writer *w, uint64_t generation,
			    int compress, const char *dir,
			    const char *tmp_path, int sync, char *err,
			    size_t errlen)
{
	struct ckpt_image_header h;
	uint64_t data_end = 0;
	int fd, r;

	memset(&h, 0, sizeof(h));
	fd = image_create_temporary(dir, tmp_path, err, errlen);
	if (fd < 0)
		return fd;
	fchmod(fd, 0600);	/* whatever the program's umask */
	fill_header(&h, w, generation);
	if (w->chain) {
		h.data_offset = CKPT_HEADER_SIZE;
		r = chain_write_memory(w, fd, dir, &h, &data_end, err, errlen);
	} else {
		r = write_plain_memory(w, fd, &h, compress, &data_end, err,
				       errlen);
	}
	h.image_size = lay_out_blobs(w, data_end);
	if (w->chain) {
		lay_out_meta(w, &h, (h.image_size + 7) & ~7ULL);
		h.image_size = h.meta_offset + h.meta_size;
	}
	if (r == 0)
		r = write_blobs(w, fd, err, errlen);
	if (r == 0 && (r = write_meta(w, fd, &h)) < 0)
		ckpt_fmt(err, errlen, "writing metadata to %s: %s", tmp_path,
			 strerror(-r));
	if (r == 0 && (r = write_header(fd, &h)) < 0)
		ckpt_fmt(err, errlen, "writing header to %s: %s", tmp_path,
			 strerror(-r));
	/* The last blob's page padding is not written: the file gets its
	 * full, declared size here. */
	if (r == 0 && ftruncate(fd, h.image_size) < 0) {
		r = -errno;
		ckpt_fmt(err, errlen, "extending %s to %llu bytes: %s",
			 tmp_path, (unsigned long long)h.image_size,
			 strerror(errno));
	}
	if (r == 0 && sync && fsync(fd) < 0) {
		r = -errno;
		ckpt_fmt(err, errlen, "fsync %s: %s", tmp_path,
			 strerror(errno));
	}
	if (close(fd) < 0 && r == 0) {
		r = -errno;
		ckpt_fmt(err, errlen, "closing %s: %s", tmp_path,
			 strerror(errno));
	}
	if (r < 0) {
		name_the_image(err, errlen, tmp_path);
		unlink(tmp_path);
	}
	return r;
}

static void image_paths(const char *dir, int chain, uint64_t generation,
			char *final_path, size_t pathlen, char *tmp_path,
			size_t tmplen)
{
	char name[600];

	image_final_name(name, sizeof(name), ckpt.program, ckpt.unique_id,
			 chain, generation);
	ckpt_fmt(final_path, pathlen, "%s/%s", dir, name);
	image_tmp_name(name, sizeof(name));
	ckpt_fmt(tmp_path, tmplen, "%s/%s", dir, name);
}

static void writer_init(struct image_writer *w, int incremental)
{
	memset(w, 0, sizeof(*w));
	w->regions.elem = sizeof(struct ckpt_region);
	w->extents.elem = sizeof(struct ckpt_extent);
	w->threads.elem = sizeof(struct ckpt_thread_info);
	w->fds.elem = sizeof(struct ckpt_fd_info);
	w->files.elem = sizeof(struct ckpt_file_record);
	w->strings.elem = 1;
	w->blobs.elem = sizeof(struct blob);
	w->links.elem = sizeof(struct ckpt_image_link);
	w->signal_state.elem = sizeof(struct ckpt_signal_state);
	w->thread_signals.elem = sizeof(struct ckpt_thread_signals);
	w->chain = incremental;
}

/* The image's paths and every table: all the image takes from the
 * kernel about the process. Only memory is read after this. */
static int prepare_image(struct image_writer *w, uint64_t generation,
			 int incremental, int forked, int scan_memory,
			 const char *dir,
			 char *final_path, size_t pathlen, char *tmp_path,
			 size_t tmplen, char *err, size_t errlen)
{
	writer_init(w, incremental);
	w->zero_pages_later = forked;
	/* Reserve (virtual, untouched) room up front: growing a table by
	 * mremap during the memory scan could punch a hole into a region
	 * that is already listed. The region and extent tables are made
	 * by memory_scan once /proc/self/maps is read, so they are not
	 * part of the image while their hashes are filled in. */
	if (table_reserve(&w->strings, 1 << 24) < 0) {
		ckpt_fmt(err, errlen, "reserving image tables: %s",
			 strerror(ENOMEM));
		return -ENOMEM;
	}
	image_paths(dir, incremental, generation, final_path, pathlen, tmp_path,
		    tmplen);
	return build_tables(w, scan_memory, err, errlen);
}

int image_write(uint64_t generation, int compress, int incremental,
		const char *dir,
		char *final_path, size_t pathlen, char *tmp_path,
		size_t tmplen, char *err, size_t errlen)
{
	struct image_writer w;
	int r;

	r = prepare_image(&w, generation, incremental, 0, 1, dir, final_path,
			  pathlen, tmp_path, tmplen, err, errlen);
	if (r == 0)
		r = write_image_file(&w, generation, compress, dir, tmp_path,
				     0, err, errlen);
	memory_reprotect();
	writer_free(&w);
	return r;
}

/* A forked checkpoint (forked_copy.c): the tables made here, the file
 * written and synced by the copy. 0 once the copy holds all it needs
 * (the threads may resume), or -errno. */
int image_write_forked(uint64_t generation, int compress, const char *dir,
		       char *final_path, size_t pathlen, char *tmp_path,
		       size_t tmplen, pid_t *template_pid, char *err,
		       size_t errlen)
{
	struct image_writer w;
	struct forked_image img = { generation, compress, dir, tmp_path };
	int r;

	/* a template (of memory not shared with anyone) scans its memory
	 * only when an image is asked of it: not while the program waits */
	int scanned = !template_pid || template_needs_memory_scan();

	r = prepare_image(&w, generation, 0, 1, scanned, dir, final_path,
			  pathlen, tmp_path, tmplen, err, errlen);
	if (r == 0 && template_pid) {
		*template_pid = 0;
		r = template_start(&w, &img, final_path, scanned, template_pid,
				   err, errlen);
		if (r != -EOPNOTSUPP)
			goto out;
		*template_pid = 0;
		r = scanned ? 0 : memory_scan(&w, err, errlen);
	}
	if (r == 0)
		r = forked_copy_start(&w, &img, err, errlen);
out:
	memory_reprotect();
	writer_free(&w);
	return r;
}

/* In the copy: the whole image, synced, under its temporary name. */
int image_write_in_copy(struct image_writer *w, const struct forked_image *img,
			char *err, size_t errlen)
{
	int r = memory_drop_zero_pages(w);

	if (r < 0) {
		ckpt_fmt(err, errlen, "listing the pages to save: %s",
			 strerror(-r));
		return r;
	}
	return write_image_file(w, img->generation, img->compress, img->dir,
				img->tmp_path, 1, err, errlen);
}

/* After the application resumed: the new image on disk, under its
 * temporary name (the previous image is untouched). */
int image_sync(const char *tmp_path, char *err, size_t errlen)
{
	int fd, r = 0;

	/* the program runs: a fork must not inherit it (manager_fds.c) */
	manager_fds_hold();
	fd = manager_fd_keep(open(tmp_path, O_RDONLY | O_NOFOLLOW |
				  O_CLOEXEC));
	if (fd < 0)
		r = -errno;
	manager_fds_release();
	if (fd >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0)
		ckpt_fmt(err, errlen, "fsync %s: %s", tmp_path, strerror(-r));
	manager_fd_close(fd);
	if (r < 0)
		unlink(tmp_path);
	return r;
}
