// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fields of an image against what the restart will do with them.
 * Checksums say an image is the one that was written, not that what was
 * written makes sense: a program break at 2^62 becomes an ELF segment the
 * kernel refuses after execve's point of no return, a TLS base of 0 or a
 * stack without access rights kills the restored program with SIGSEGV.
 * Each check names the field, its value and why it cannot be used:
 * "field brk_start = 0x4000000000000000: beyond this machine's user
 * address space (it ends at 0x7ffffffff000)". image_open() runs them
 * after the tables were found inside the metadata (image_check.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "image_check.h"

/* fds above this are a corrupt record (the kernel's nr_open default;
 * read from /proc/sys/fs/nr_open when it can be) */
#define FD_NUMBER_END_DEFAULT	(1 << 20)
#define PIPE_SIZE_MAX		(1U << 31)

static int field_fail(struct ckpt_image *img, const char *name,
		      const char *value, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int field_fail(struct ckpt_image *img, const char *name,
		      const char *value, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	n = snprintf(img->err, sizeof(img->err), "field %s = %s: ", name,
		     value);
	if (n >= sizeof(img->err))
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(img->err + n, sizeof(img->err) - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

struct value_text {
	char s[32];
};

static const char *hex(struct value_text *t, uint64_t v)
{
	snprintf(t->s, sizeof(t->s), "%#llx", (unsigned long long)v);
	return t->s;
}

static const char *dec(struct value_text *t, int64_t v)
{
	snprintf(t->s, sizeof(t->s), "%lld", (long long)v);
	return t->s;
}

/*
 * The end of this machine's user address space: 47 bits, or 56 with
 * five-level page tables (probed: only then can a page be mapped above
 * 2^47).
 */
static uint64_t user_space_end(void)
{
	static uint64_t end;
	void *p;

	if (end)
		return end;
	end = (1ULL << 47) - 4096;
	p = mmap((void *)(1ULL << 48), 4096, PROT_NONE, MAP_PRIVATE |
		 MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != MAP_FAILED) {
		if (p == (void *)(1ULL << 48))
			end = (1ULL << 56) - 4096;
		munmap(p, 4096);
	}
	return end;
}

static int fd_number_end(void)
{
	static int end;
	FILE *f;

	if (end)
		return end;
	end = FD_NUMBER_END_DEFAULT;
	f = fopen("/proc/sys/fs/nr_open", "re");
	if (f) {
		if (fscanf(f, "%d", &end) != 1 || end <= 0)
			end = FD_NUMBER_END_DEFAULT;
		fclose(f);
	}
	return end;
}

/* The saved, non-special region holding addr, or NULL. */
static const struct ckpt_region *region_at(const struct ckpt_image *img,
					   uint64_t addr)
{
	for (uint32_t i = 0; i < img->hdr.nregions; i++) {
		const struct ckpt_region *r = &img->regions[i];

		if (addr >= r->start && addr < r->end)
			return region_is_special(r) ? NULL : r;
	}
	return NULL;
}

static const char *prot_text(uint32_t prot, char *buf)
{
	buf[0] = prot & PROT_READ ? 'r' : '-';
	buf[1] = prot & PROT_WRITE ? 'w' : '-';
	buf[2] = prot & PROT_EXEC ? 'x' : '-';
	buf[3] = '\0';
	return buf;
}

/*
 * addr must lie in a saved region with at least prot: where the restored
 * program reads and writes (a stack, a TLS block) or runs. value is the
 * field's (a stack pointer's addr is below it), `use` says what the
 * restart does with it.
 */
static int check_address(struct ckpt_image *img, const char *name,
			 uint64_t value, uint64_t addr, uint32_t prot,
			 const char *use)
{
	const struct ckpt_region *r = region_at(img, addr);
	struct value_text t;
	char want[4], have[4];

	if (!r)
		return field_fail(img, name, hex(&t, value), "%s, but no saved "
				  "region holds it", use);
	if ((r->prot & prot) != prot)
		return field_fail(img, name, hex(&t, value), "%s, but its "
				  "region %llx-%llx has protection %s, not %s",
				  use,
				  (unsigned long long)r->start,
				  (unsigned long long)r->end,
				  prot_text(r->prot, have),
				  prot_text(prot, want));
	return 0;
}

static bool nul_terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

#define HEADER_FLAGS_KNOWN (CKPT_IMG_F_HAS_BRK | CKPT_IMG_F_SESSION_LEADER | \
			    CKPT_IMG_F_CTTY | CKPT_IMG_F_MAPPABLE | \
			    CKPT_IMG_F_CHAIN | CKPT_IMG_F_LAUNCHED)

static int check_identity(struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;
	struct value_text t;

	if (h->flags & ~(uint64_t)HEADER_FLAGS_KNOWN)
		return field_fail(img, "flags", hex(&t, h->flags), "unknown "
				  "flags %#llx", (unsigned long long)
				  (h->flags & ~(uint64_t)HEADER_FLAGS_KNOWN));
	if (h->vpid <= 0)
		return field_fail(img, "vpid", dec(&t, h->vpid), "the restored "
				  "process's pid must be positive");
	if (h->vppid < 0)
		return field_fail(img, "vppid", dec(&t, h->vppid), "a parent "
				  "pid cannot be negative");
	if (!nul_terminated(h->program, sizeof(h->program)))
		return field_fail(img, "program", "(64 bytes)", "not "
				  "NUL-terminated");
	if (!nul_terminated(h->unique_id, sizeof(h->unique_id)))
		return field_fail(img, "unique_id", "(64 bytes)", "not "
				  "NUL-terminated");
	if (h->cpu_features_in_use & ~h->cpu_features)
		return field_fail(img, "cpu_features_in_use",
				  hex(&t, h->cpu_features_in_use), "holds "
				  "state components %#llx that cpu_features "
				  "%#llx lacks", (unsigned long long)
				  (h->cpu_features_in_use & ~h->cpu_features),
				  (unsigned long long)h->cpu_features);
	return 0;
}

static const struct ckpt_region *heap_region(const struct ckpt_image *img)
{
	for (uint32_t i = 0; i < img->hdr.nregions; i++)
		if (img->regions[i].kind == CKPT_REGION_HEAP)
			return &img->regions[i];
	return NULL;
}

/* The break becomes an ELF segment's end (restart/loader_exec.c) and
 * brk()'s argument (restart/loader/regions.c). */
static int check_brk(struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;
	const struct ckpt_region *heap = heap_region(img), *r;
	uint64_t end = user_space_end();
	struct value_text t;

	if (!(h->flags & CKPT_IMG_F_HAS_BRK))
		return 0;
	if (h->brk_start % h->page_size || !h->brk_start)
		return field_fail(img, "brk_start", hex(&t, h->brk_start),
				  "the program break's start is not a "
				  "page-aligned address");
	if (h->brk_start >= end)
		return field_fail(img, "brk_start", hex(&t, h->brk_start),
				  "beyond this machine's user address space "
				  "(it ends at %#llx)",
				  (unsigned long long)end);
	if (h->brk_end < h->brk_start || h->brk_end > end)
		return field_fail(img, "brk_end", hex(&t, h->brk_end), "the "
				  "program break must lie between brk_start "
				  "%#llx and the end of the user address space "
				  "%#llx", (unsigned long long)h->brk_start,
				  (unsigned long long)end);
	if (heap && heap->start != h->brk_start)
		return field_fail(img, "brk_start", hex(&t, h->brk_start),
				  "the heap region starts at %#llx",
				  (unsigned long long)heap->start);
	r = region_at(img, h->brk_start);
	if (!heap && r)
		return field_fail(img, "brk_start", hex(&t, h->brk_start),
				  "inside region %llx-%llx, which is not the "
				  "heap", (unsigned long long)r->start,
				  (unsigned long long)r->end);
	return 0;
}

/* One [stack] and one [heap] at most, both readable and writable: the
 * program runs on the one and malloc writes the other. */
static int check_region_fields(struct ckpt_image *img, uint32_t i,
			       uint32_t *nstack, uint32_t *nheap)
{
	const struct ckpt_region *r = &img->regions[i];
	uint64_t end = user_space_end();
	struct value_text t;
	char name[48], have[4];

	snprintf(name, sizeof(name), "region[%u].end", i);
	if (r->end > end)
		return field_fail(img, name, hex(&t, r->end), "beyond this "
				  "machine's user address space (it ends at "
				  "%#llx)", (unsigned long long)end);
	snprintf(name, sizeof(name), "region[%u].file_offset", i);
	if (region_is_file(r) && r->file_offset + (r->end - r->start) <
	    r->file_offset)
		return field_fail(img, name, hex(&t, r->file_offset),
				  "the mapping's end overflows");
	if (r->kind != CKPT_REGION_STACK && r->kind != CKPT_REGION_HEAP)
		return 0;
	snprintf(name, sizeof(name), "region[%u].kind", i);
	if ((r->kind == CKPT_REGION_STACK ? ++*nstack : ++*nheap) > 1)
		return field_fail(img, name, region_kind_name(r->kind),
				  "a second %s region (%llx-%llx)",
				  region_kind_name(r->kind),
				  (unsigned long long)r->start,
				  (unsigned long long)r->end);
	snprintf(name, sizeof(name), "region[%u].prot", i);
	if ((r->prot & (PROT_READ | PROT_WRITE)) != (PROT_READ | PROT_WRITE))
		return field_fail(img, name, prot_text(r->prot, have),
				  "the %s region %llx-%llx must be readable "
				  "and writable", region_kind_name(r->kind),
				  (unsigned long long)r->start,
				  (unsigned long long)r->end);
	return 0;
}

static int check_regions(struct ckpt_image *img)
{
	uint32_t nstack = 0, nheap = 0;
	int err;

	for (uint32_t i = 0; i < img->hdr.nregions; i++) {
		err = check_region_fields(img, i, &nstack, &nheap);
		if (err)
			return err;
	}
	return 0;
}

/* The loader sets the TLS base and calls restore_entry on
 * restore_stack_top (restart/loader/handoff.c). */
static int check_handoff(struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;
	struct value_text t;
	int err;

	err = check_address(img, "restore_entry", h->restore_entry,
			    h->restore_entry, PROT_EXEC,
			    "the loader calls libckpt there");
	if (err)
		return err;
	if (h->restore_stack_top % 16)
		return field_fail(img, "restore_stack_top",
				  hex(&t, h->restore_stack_top), "the restore "
				  "stack's top must be 16-byte aligned");
	err = check_address(img, "restore_stack_top", h->restore_stack_top,
			    h->restore_stack_top - 16, PROT_READ | PROT_WRITE,
			    "libckpt's restore code runs on the stack below");
	if (err)
		return err;
	return check_address(img, "restore_tls", h->restore_tls,
			     h->restore_tls, PROT_READ | PROT_WRITE,
			     "the loader sets the main thread's TLS base "
			     "there");
}

static int check_thread(struct ckpt_image *img, uint32_t i, uint32_t *nmain)
{
	const struct ckpt_thread_info *th = &img->threads[i];
	struct value_text t;
	char name[48];
	int err;

	snprintf(name, sizeof(name), "thread[%u].vtid", i);
	if (th->vtid <= 0)
		return field_fail(img, name, dec(&t, th->vtid), "a thread id "
				  "must be positive");
	for (uint32_t j = 0; j < i; j++)
		if (img->threads[j].vtid == th->vtid)
			return field_fail(img, name, dec(&t, th->vtid),
					  "thread[%u] has the same id", j);
	snprintf(name, sizeof(name), "thread[%u].is_main", i);
	if (th->is_main != 0 && th->is_main != 1)
		return field_fail(img, name, dec(&t, th->is_main), "must be 0 "
				  "or 1");
	if (th->is_main && ++*nmain > 1)
		return field_fail(img, name, dec(&t, th->is_main), "a second "
				  "main thread");
	/* where its next push lands: sp may be the top of an empty stack */
	snprintf(name, sizeof(name), "thread[%u].sp", i);
	err = check_address(img, name, th->sp, th->sp - 8,
			    PROT_READ | PROT_WRITE,
			    "the thread resumes on the stack below");
	if (err)
		return err;
	snprintf(name, sizeof(name), "thread[%u].tls", i);
	return check_address(img, name, th->tls, th->tls,
			     PROT_READ | PROT_WRITE,
			     "the thread's TLS base is set there");
}

static int check_threads(struct ckpt_image *img)
{
	struct value_text t;
	uint32_t nmain = 0;
	int err;

	if (!img->hdr.nthreads)
		return field_fail(img, "nthreads", "0", "a process has at "
				  "least one thread");
	for (uint32_t i = 0; i < img->hdr.nthreads; i++) {
		err = check_thread(img, i, &nmain);
		if (err)
			return err;
	}
	if (!nmain)
		return field_fail(img, "nthreads", dec(&t, img->hdr.nthreads),
				  "no thread record is the main thread");
	return 0;
}

static bool fd_kind_has_data(uint32_t kind)
{
	return kind == CKPT_FD_FILE_DELETED || kind == CKPT_FD_PIPE ||
	       kind == CKPT_FD_UNIX_STREAM || kind == CKPT_FD_FIFO ||
	       kind == CKPT_FD_SOCKET_LISTEN || kind == CKPT_FD_SOCKET_BOUND ||
	       kind == CKPT_FD_SOCKET_OUTSIDE || kind == CKPT_FD_PTY_MASTER ||
	       kind == CKPT_FD_UNIX_DGRAM || kind == CKPT_FD_UNIX_SEQPACKET;
}

static bool fd_kind_has_path(uint32_t kind)
{
	return kind == CKPT_FD_FILE || kind == CKPT_FD_FILE_DELETED ||
	       kind == CKPT_FD_DIR || kind == CKPT_FD_DEVICE ||
	       kind == CKPT_FD_FIFO;
}

static int check_pipe_size(struct ckpt_image *img, uint32_t i)
{
	const struct ckpt_fd_info *f = &img->fds[i];
	struct value_text t;
	char name[48];

	if (f->kind != CKPT_FD_PIPE && f->kind != CKPT_FD_FIFO)
		return 0;
	snprintf(name, sizeof(name), "fd[%u].pipe_size", i);
	if (f->pipe_size % img->hdr.page_size || f->pipe_size > PIPE_SIZE_MAX)
		return field_fail(img, name, dec(&t, f->pipe_size), "a pipe's "
				  "size is a page multiple up to %u",
				  PIPE_SIZE_MAX);
	snprintf(name, sizeof(name), "fd[%u].data_size", i);
	if (f->pipe_size && f->data_size > f->pipe_size)
		return field_fail(img, name, dec(&t, (int64_t)f->data_size),
				  "more bytes in flight than the pipe's size "
				  "%u holds", f->pipe_size);
	return 0;
}

static int check_fd(struct ckpt_image *img, uint32_t i)
{
	const struct ckpt_fd_info *f = &img->fds[i];
	struct value_text t;
	char name[48];

	snprintf(name, sizeof(name), "fd[%u].fd", i);
	if (f->fd < 0 || f->fd >= fd_number_end())
		return field_fail(img, name, dec(&t, f->fd), "not an fd number "
				  "(0 to %d)", fd_number_end() - 1);
	for (uint32_t j = 0; j < i; j++)
		if (img->fds[j].fd == f->fd)
			return field_fail(img, name, dec(&t, f->fd), "fd[%u] "
					  "has the same number", j);
	snprintf(name, sizeof(name), "fd[%u].kind", i);
	if (!fd_kind_name(f->kind))
		return field_fail(img, name, dec(&t, f->kind), "unknown kind");
	snprintf(name, sizeof(name), "fd[%u].path", i);
	if (fd_kind_has_path(f->kind) && !*image_string(img, f->path))
		return field_fail(img, name, dec(&t, f->path), "a %s record "
				  "without a path", fd_kind_name(f->kind));
	snprintf(name, sizeof(name), "fd[%u].data_size", i);
	if (f->data_size && !fd_kind_has_data(f->kind))
		return field_fail(img, name, dec(&t, (int64_t)f->data_size),
				  "a %s record carries no content",
				  fd_kind_name(f->kind));
	if (f->kind == CKPT_FD_PTY_MASTER &&
	    f->data_size != sizeof(struct ckpt_pty_info))
		return field_fail(img, name, dec(&t, (int64_t)f->data_size),
				  "a pty-master record carries its %zu-byte "
				  "settings (struct ckpt_pty_info)",
				  sizeof(struct ckpt_pty_info));
	return check_pipe_size(img, i);
}

static int check_fds(struct ckpt_image *img)
{
	int err;

	for (uint32_t i = 0; i < img->hdr.nfds; i++) {
		err = check_fd(img, i);
		if (err)
			return err;
	}
	return 0;
}

/* ckpt_restart recreates such a file by path, with this mode. */
static int check_files(struct ckpt_image *img)
{
	struct value_text t;
	char name[48];

	for (uint32_t i = 0; i < img->hdr.nfiles; i++) {
		const struct ckpt_file_record *f = &img->files[i];

		snprintf(name, sizeof(name), "file[%u].path", i);
		if (image_string(img, f->path)[0] != '/')
			return field_fail(img, name, dec(&t, f->path), "not an "
					  "absolute path: %s",
					  image_string(img, f->path));
		snprintf(name, sizeof(name), "file[%u].mode", i);
		if (f->mode & ~07777U)
			return field_fail(img, name, hex(&t, f->mode), "holds "
					  "more than permission bits");
	}
	return 0;
}

int image_check_fields(struct ckpt_image *img)
{
	int err = check_identity(img);

	if (!err)
		err = check_regions(img);
	if (!err)
		err = check_brk(img);
	if (!err)
		err = check_handoff(img);
	if (!err)
		err = check_threads(img);
	if (!err)
		err = check_fds(img);
	if (!err)
		err = check_files(img);
	return err;
}

/* The socket records of an image lie close together (libckpt packs
 * them): read a window of them at a time instead of one pread each
 * (thousands for a program with many connections). */
#define RECORD_WINDOW (64 * 1024)

static struct {
	const struct ckpt_image *img;
	int fd;
	uint64_t off, len;
	char buf[RECORD_WINDOW];
} window;

static int read_record(const struct ckpt_image *img, void *dst, size_t len,
		       uint64_t off)
{
	ssize_t n;

	if (len > RECORD_WINDOW)
		return pread(img->fd, dst, len, off) == (ssize_t)len ? 0 : -1;
	if (window.img != img || window.fd != img->fd || off < window.off ||
	    off + len > window.off + window.len) {
		window.img = NULL;
		n = pread(img->fd, window.buf, RECORD_WINDOW, off);
		if (n < (ssize_t)len)
			return -1;
		window.img = img;
		window.fd = img->fd;
		window.off = off;
		window.len = (uint64_t)n;
	}
	memcpy(dst, window.buf + (off - window.off), len);
	return 0;
}

void image_forget_records(const struct ckpt_image *img)
{
	if (window.img == img)
		window.img = NULL;
}

/* The struct ckpt_socket_info at the start of a socket record's data, as
 * an image of any size has it: fields an older image lacks read as none
 * (no datagrams, options unset). 0 or -EINVAL. */
int image_socket_info(const struct ckpt_image *img,
			    const struct ckpt_fd_info *f,
			    struct ckpt_socket_info *si)
{
	size_t have = f->data_size < sizeof(*si) ? f->data_size : sizeof(*si);
	uint32_t size;

	memset(si, 0, sizeof(*si));
	if (have < CKPT_SOCKET_INFO_SIZE_V1 ||
	    read_record(img, si, have, f->data_offset) < 0)
		return -EINVAL;
	size = ckpt_socket_info_size(si);
	if (size < CKPT_SOCKET_INFO_SIZE_V1 || size > f->data_size)
		return -EINVAL;
	if (size < sizeof(*si)) {
		memset((char *)si + size, 0, sizeof(*si) - size);
		if (size < offsetof(struct ckpt_socket_info, opt) +
			   sizeof(si->opt))
			for (int i = 0; i < CKPT_SOCK_OPT_SLOTS; i++)
				si->opt[i] = CKPT_SOCK_OPT_UNSET;
	}
	return 0;
}
