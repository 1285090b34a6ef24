/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory: every mapping listed in /proc/self/maps becomes a region of the
 * image. Which pages carry data comes from /proc/self/pagemap (populated
 * anonymous pages; for private file mappings only the pages copied on
 * write) and, for shared memory, mincore(). Files mapped unchanged are
 * saved by reference. The kernel's special mappings ([vdso], [vvar],
 * [vvar_vclock]) are recorded by address only, [vsyscall] not at all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ckpt/accel.h"
#include "dirty_pages.h"
#include "image_writer.h"
#include "internal.h"

#define PAGE 4096UL
#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_FILE (1ULL << 61)
#define PAGEMAP_BATCH 8192
#define ACCEL_BATCH 1024
#define STACK_RESERVE_MAX (64UL << 20)

/* Regions made readable for the write; protected again afterwards. */
#define MAX_UNPROTECTED 256
static struct maps_vma unprotected[MAX_UNPROTECTED];
static int nunprotected;

struct scan {
	struct image_writer *w;
	int pagemap_fd;
	int skip_zero_pages;	/* the region being scanned restores as zeros */
	int heap_seen;
	uint64_t prev_end;
	uint64_t pm[PAGEMAP_BATCH];
	unsigned char mc[PAGEMAP_BATCH];
	struct ckpt_accel_run runs[ACCEL_BATCH];
};

/* Read all of /proc/self/maps into a buffer that stays mapped for the
 * life of the process: unmapping it before the data is written would
 * leave a hole in a region already listed. If the buffer had to grow,
 * the listing may describe its old place, so read again. */
static char *maps_buf;
static size_t maps_cap;

static int grow_maps_buf(void)
{
	size_t cap = maps_cap ? maps_cap * 2 : (1 << 20);
	char *nb = maps_buf ? mremap(maps_buf, maps_cap, cap, MREMAP_MAYMOVE) :
			      mmap(NULL, cap, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				   -1, 0);

	if (nb == MAP_FAILED)
		return -ENOMEM;
	maps_buf = nb;
	maps_cap = cap;
	return 0;
}

static int read_maps_once(int *grew)
{
	size_t len = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (len + 4096 > maps_cap) {
			r = grow_maps_buf();
			if (r < 0)
				break;
			*grew = 1;
		}
		n = read(fd, maps_buf + len, maps_cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	maps_buf[len] = 0;
	return r;
}

static int read_maps(void)
{
	int r, grew;

	if (!maps_buf && grow_maps_buf() < 0)
		return -ENOMEM;
	do {
		grew = 0;
		r = read_maps_once(&grew);
	} while (r == 0 && grew);
	return r;
}

/* One line of /proc/self/maps; v->name points into line ("" when
 * anonymous) and lives as long as it. */
int maps_vma_parse(const char *line, struct maps_vma *v)
{
	unsigned long long start, end, off, ino;
	char perms[8];
	int consumed = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end,
		   perms, &off, &v->major, &v->minor, &ino, &consumed) < 7)
		return -EINVAL;
	v->start = start;
	v->end = end;
	v->offset = off;
	v->ino = ino;
	v->prot = (perms[0] == 'r' ? PROT_READ : 0) |
		  (perms[1] == 'w' ? PROT_WRITE : 0) |
		  (perms[2] == 'x' ? PROT_EXEC : 0);
	v->shared = perms[3] == 's';
	v->name = line + consumed;
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Entries of a directory looked through for a file's other name: past
 * this many (a huge directory), the mapping stays a deleted one. */
#define RELINK_SCAN_MAX 100000

/* The path of a regular file of device dev, inode ino, among the entries
 * of dir, into buf; 0 or -ENOENT. */
static int name_in_dir(const char *dir, dev_t dev, uint64_t ino, char *buf,
		       size_t len)
{
	struct ckpt_dir_iter it;
	const struct dirent64 *d;
	struct stat st;
	int r = -ENOENT;

	if (ckpt_dir_open(&it, dir) < 0)
		return -ENOENT;
	for (int n = 0; n < RELINK_SCAN_MAX &&
			(d = ckpt_dir_next_entry(&it)); n++) {
		if (d->d_ino != ino ||
		    fstatat(it.fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_ino != ino || st.st_dev != dev ||
		    !S_ISREG(st.st_mode))
			continue;
		size_t a = strlen(dir), b = strlen(d->d_name);

		if (a + 1 + b < len) {
			memcpy(buf, dir, a);
			buf[a] = '/';
			memcpy(buf + a + 1, d->d_name, b + 1);
			r = 0;
		}
		break;
	}
	ckpt_dir_close(&it);
	return r;
}

/*
 * A shared mapping of a file whose name was unlinked while another name
 * of it stays: glibc's sem_open makes a semaphore under a temporary name
 * in /dev/shm, maps it, links it to its real name and unlinks the
 * temporary one, so the kernel shows the creator's mapping as
 * "/dev/shm/sem.XXXXXX (deleted)" while every other process maps
 * /dev/shm/sem.NAME. Saved as deleted memory, the creator's copy would
 * come back apart from the others' (python's multiprocessing locks
 * stopped working across processes after a restart). The other name is
 * looked for in the unlinked name's directory; when found, m->name
 * points to it. A round reads the maps three times (shared regions,
 * shared files, the image): each file's answer is kept for the round
 * (linked_names, forgotten by memory_round_begins), not a directory
 * scan each time.
 */
#define LINKED_NAMES_MAX 8
static struct linked_name {
	dev_t dev;
	uint64_t ino;
	int found;
	char path[PATH_MAX];
} linked_names[LINKED_NAMES_MAX];
static int nlinked_names;

void memory_round_begins(void)
{
	nlinked_names = 0;
}

/* The other name of (dev, ino) in dir, or NULL: kept for the round. */
static const char *linked_name(const char *dir, dev_t dev, uint64_t ino)
{
	static char path[PATH_MAX];	/* when the cache is full */
	struct linked_name *l;

	for (int i = 0; i < nlinked_names; i++) {
		l = &linked_names[i];
		if (l->dev == dev && l->ino == ino)
			return l->found ? l->path : NULL;
	}
	if (nlinked_names == LINKED_NAMES_MAX)
		return name_in_dir(dir, dev, ino, path, sizeof(path)) == 0 ?
		       path : NULL;
	l = &linked_names[nlinked_names++];
	l->dev = dev;
	l->ino = ino;
	l->found = name_in_dir(dir, dev, ino, l->path, sizeof(l->path)) == 0;
	return l->found ? l->path : NULL;
}

static void name_linked_file(struct maps_vma *m)
{
	static const char deleted[] = " (deleted)";
	size_t len = strlen(m->name), keep;
	const char *slash;
	char dir[PATH_MAX];

	if (!m->shared || m->name[0] != '/' || len < sizeof(deleted) ||
	    strcmp(m->name + len - (sizeof(deleted) - 1), deleted) ||
	    !strncmp(m->name, "/memfd:", 7) || !strncmp(m->name, "/SYSV", 5) ||
	    !strncmp(m->name, "/dev/zero", 9))
		return;
	slash = strrchr(m->name, '/');
	keep = slash == m->name ? 1 : (size_t)(slash - m->name);
	if (keep >= sizeof(dir))
		return;
	memcpy(dir, m->name, keep);
	dir[keep] = 0;
	const char *other = linked_name(dir, makedev(m->major, m->minor),
					m->ino);

	if (other)
		m->name = other;
}

static int is_sysv_mapping(const struct maps_vma *m)
{
	return !strncmp(m->name, "/SYSV", 5);
}

/* The shared memory object a shared anonymous mapping belongs to, as
 * ckpt_region.file_ino names it: its inode, or a SysV segment's id with
 * CKPT_SYSV_OBJECT (the first segment of an IPC namespace has id 0). */
static uint64_t shared_object_ino(const struct maps_vma *m)
{
	return is_sysv_mapping(m) ? m->ino | CKPT_SYSV_OBJECT : m->ino;
}

/* Classify a mapping; 0 means "leave it out of the image". A shared
 * mapping shown deleted whose file has another name gets that name
 * (name_linked_file). */
static int region_kind(struct maps_vma *m, struct stat *st)
{
	const char *n;

	name_linked_file(m);
	n = m->name;

	if (!strcmp(n, "[vdso]"))
		return CKPT_REGION_VDSO;
	if (!strcmp(n, "[vvar]"))
		return CKPT_REGION_VVAR;
	if (!strcmp(n, "[vvar_vclock]"))
		return CKPT_REGION_VVAR_VCLOCK;
	if (!strcmp(n, "[heap]"))
		return CKPT_REGION_HEAP;
	if (!strcmp(n, "[stack]"))
		return CKPT_REGION_STACK;
	if (n[0] == '[') {
		if (!strncmp(n, "[anon:", 6) || !strncmp(n, "[stack:", 7))
			return m->shared ? CKPT_REGION_ANON_SHARED :
					   CKPT_REGION_ANON;
		return 0; /* [vsyscall], [uprobes], ... */
	}
	if (!n[0])
		return m->shared ? CKPT_REGION_ANON_SHARED : CKPT_REGION_ANON;
	if (ends_with(n, " (deleted)") || !strncmp(n, "/memfd:", 7) ||
	    !strncmp(n, "/SYSV", 5) || !strncmp(n, "/dev/zero", 9) ||
	    stat(n, st) < 0 || st->st_ino != m->ino || !S_ISREG(st->st_mode))
		return m->shared ? CKPT_REGION_ANON_SHARED :
				   CKPT_REGION_DELETED_PRIVATE;
	return m->shared ? CKPT_REGION_FILE_SHARED : CKPT_REGION_FILE_PRIVATE;
}

static int page_has_data(int kind, uint64_t pm, unsigned char mc)
{
	switch (kind) {
	case CKPT_REGION_FILE_PRIVATE:
		/* only pages copied on write; the rest is in the file */
		return (pm & PM_SWAPPED) ||
		       ((pm & PM_PRESENT) && !(pm & PM_FILE));
	case CKPT_REGION_ANON_SHARED:
	case CKPT_REGION_DELETED_PRIVATE:
		return (pm & (PM_PRESENT | PM_SWAPPED)) || (mc & 1);
	default:
		return !!(pm & (PM_PRESENT | PM_SWAPPED));
	}
}

/* A page of all zeros: stops at the first non-zero word, so a page of
 * data costs one cache line (docs/performance.md, "Zero pages"). */
static int page_is_zero(const uint64_t *p)
{
	for (size_t i = 0; i < PAGE / 8; i += 8)
		if (p[i] | p[i + 1] | p[i + 2] | p[i + 3] | p[i + 4] |
		    p[i + 5] | p[i + 6] | p[i + 7])
			return 0;
	return 1;
}

int memory_page_is_zero(const void *p)
{
	return page_is_zero(p);
}

/*
 * A run of populated pages, without its pages of zeros when the region is
 * restored as fresh (zero-filled) memory: written zeros, the shared zero
 * page, a calloc'd buffer never used are not stored, in any mode. The
 * manager's own stack is taken whole: it changes while the image is
 * written.
 */
static int add_data_run(struct scan *s, uint64_t start, uint64_t len,
			uint64_t *saved)
{
	uint64_t run = 0, a, end = start + len;
	int r;

	if (!s->skip_zero_pages || manager_stack_overlaps(start, len)) {
		*saved += len;
		return writer_add_extent(s->w, start, len);
	}
	for (a = start; a < end; a += PAGE) {
		if (!page_is_zero((const uint64_t *)(uintptr_t)a)) {
			if (!run)
				run = a;
			continue;
		}
		if (run) {
			r = writer_add_extent(s->w, run, a - run);
			if (r < 0)
				return r;
			*saved += a - run;
			run = 0;
		}
	}
	if (!run)
		return 0;
	*saved += end - run;
	return writer_add_extent(s->w, run, end - run);
}

/* Restored as fresh anonymous memory (or a fresh shared object), where
 * a page not stored reads as zeros; a private file mapping's page not
 * stored would read the file instead. Unreadable pages are not looked
 * at. */
int memory_restores_as_zeros(int kind, uint32_t prot)
{
	return (prot & PROT_READ) && kind != CKPT_REGION_FILE_PRIVATE &&
	       kind != CKPT_REGION_VDSO;
}

/* The pages of one extent that are not all zeros, as extents of their
 * own (same encoding) pushed onto t. */
static int push_nonzero_runs(struct table *t, const struct ckpt_extent *e)
{
	uint64_t run = 0, a, end = e->addr + e->len;
	struct ckpt_extent *x;

	for (a = e->addr; a <= end; a += PAGE) {
		if (a < end && !page_is_zero((const uint64_t *)(uintptr_t)a)) {
			if (!run)
				run = a;
			continue;
		}
		if (!run)
			continue;
		x = table_push(t);
		if (!x)
			return -ENOMEM;
		*x = *e;
		x->addr = run;
		x->len = a - run;
		run = 0;
	}
	return 0;
}

/*
 * A forked checkpoint looks for pages of zeros in its copy, not while the
 * program is stopped (a read of every page: 40 ms per GiB here): the
 * extent table is made again without them, region by region.
 */
int memory_drop_zero_pages(struct image_writer *w)
{
	struct table out = { .elem = sizeof(struct ckpt_extent) };
	struct ckpt_region *r = (struct ckpt_region *)w->regions.base;
	const struct ckpt_extent *e = (const struct ckpt_extent *)
				      w->extents.base;

	if (!w->zero_pages_later)
		return 0;
	if (table_reserve(&out, w->extents.n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < w->regions.n; i++) {
		uint32_t first = out.n;

		for (uint32_t k = 0; k < r[i].nextents; k++) {
			const struct ckpt_extent *x = &e[r[i].first_extent + k];
			int keep = !memory_restores_as_zeros(r[i].kind,
							     r[i].prot) ||
				   r[i].kind == CKPT_REGION_VDSO ||
				   manager_stack_overlaps(x->addr, x->len);
			void *slot = keep ? table_push(&out) : NULL;

			if (keep && !slot)
				return -ENOMEM;
			if (keep)
				memcpy(slot, x, sizeof(*x));
			else if (push_nonzero_runs(&out, x) < 0)
				return -ENOMEM;
		}
		r[i].first_extent = first;
		r[i].nextents = out.n - first;
	}
	table_free(&w->extents);
	w->extents = out;
	return 0;
}

/* With the kernel accelerator, the populated runs of an anonymous region
 * come from its page-table walk instead of pagemap (much faster for large
 * sparse mappings). -ENOSYS: not available, use pagemap. */
static int add_accel_extents(struct scan *s, uint64_t start, uint64_t end,
			     uint64_t *saved)
{
	struct ckpt_accel_run *runs = s->runs;
	uint64_t from = start;
	long n;
	int r;

	if (!(ckpt_accel_ops() & CKPT_ACCEL_OP_POPULATED))
		return -ENOSYS;
	do {
		n = ckpt_accel_populated_runs(from, end, runs, ACCEL_BATCH);
		if (n < 0)
			return from == start ? -ENOSYS : (int)n;
		for (long i = 0; i < n; i++) {
			r = add_data_run(s, runs[i].start,
					 runs[i].end - runs[i].start, saved);
			if (r < 0)
				return r;
		}
		if (n == ACCEL_BATCH)
			from = runs[n - 1].end;
	} while (n == ACCEL_BATCH && from < end);
	return 0;
}

/* Add the runs of pages of [start,end) that carry data. */
static int add_populated_extents(struct scan *s, int kind, uint64_t start,
				 uint64_t end, uint64_t *saved)
{
	uint64_t run = 0, addr = start;
	int need_mincore = kind == CKPT_REGION_ANON_SHARED ||
			   kind == CKPT_REGION_DELETED_PRIVATE;
	int r;

	if (kind == CKPT_REGION_ANON || kind == CKPT_REGION_HEAP ||
	    kind == CKPT_REGION_STACK) {
		r = add_accel_extents(s, start, end, saved);
		if (r != -ENOSYS)
			return r;
	}

	while (addr < end) {
		size_t n = (end - addr) / PAGE, i;
		ssize_t got;

		if (n > PAGEMAP_BATCH)
			n = PAGEMAP_BATCH;
		got = pread(s->pagemap_fd, s->pm, n * 8,
			    ((addr + emulator_guest_base()) / PAGE) * 8);
		if (got != (ssize_t)(n * 8))
			return got < 0 ? -errno : -EIO;
		memset(s->mc, 0, n);
		if (need_mincore)
			mincore((void *)(uintptr_t)addr, n * PAGE, s->mc);
		for (i = 0; i < n; i++) {
			uint64_t a = addr + i * PAGE;

			if (page_has_data(kind, s->pm[i], s->mc[i])) {
				if (!run)
					run = a;
				continue;
			}
			if (run) {
				r = add_data_run(s, run, a - run, saved);
				if (r < 0)
					return r;
				run = 0;
			}
		}
		addr += n * PAGE;
	}
	return run ? add_data_run(s, run, end - run, saved) : 0;
}

/* The main stack grows on demand, which a plain mapping would not: give
 * the restored one room down to RLIMIT_STACK (pages stay untouched). */
static uint64_t stack_reserve_start(const struct maps_vma *m, uint64_t floor)
{
	struct rlimit rl;
	uint64_t want = STACK_RESERVE_MAX, start;

	if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < want)
		want = rl.rlim_cur;
	if (m->end - m->start >= want)
		return m->start;
	start = (m->end - want) & ~(PAGE - 1);
	/* keep the kernel's guard gap to the mapping below */
	if (start < floor + (1UL << 20))
		start = floor + (1UL << 20);
	return start < m->start ? start : m->start;
}

static int save_region(struct scan *s, struct maps_vma *m,
		       char *err, size_t errlen)
{
	int image_backed = restart_image_backs(m);
	struct ckpt_region r;
	struct stat st;
	uint64_t saved = 0;
	int kind, rc;

	memset(&st, 0, sizeof(st));
	kind = image_backed ? CKPT_REGION_ANON : region_kind(m, &st);
	if (!kind)
		return 0;
	/* the program break's heap is the first [heap]; a part apart from
	 * it (another protection) is plain memory */
	if (kind == CKPT_REGION_HEAP && s->heap_seen++)
		kind = CKPT_REGION_ANON;
	memset(&r, 0, sizeof(r));
	r.start = m->start;
	r.end = m->end;
	r.prot = m->prot;
	r.kind = kind;
	if (kind == CKPT_REGION_FILE_PRIVATE || kind == CKPT_REGION_FILE_SHARED) {
		r.file_offset = m->offset;
		r.file_size = st.st_size;
		r.file_mtime_ns = st.st_mtim.tv_sec * 1000000000ULL +
				  st.st_mtim.tv_nsec;
		r.file_ino = st.st_ino;
	}
	if (kind == CKPT_REGION_ANON_SHARED) {
		/* the shared object: ckpt_restart maps one copy of it into
		 * every process that had it (shared_memory.c) */
		r.file_offset = m->offset;
		r.file_ino = shared_object_ino(m);
	}
	if (kind == CKPT_REGION_STACK) {
		r.start = stack_reserve_start(m, s->prev_end);
		r.flags |= CKPT_REGION_F_GROWSDOWN | CKPT_REGION_F_NORESERVE;
	}
	rc = writer_add_region(s->w, &r, m->name);
	if (rc < 0)
		goto fail;
	if (kind == CKPT_REGION_FILE_SHARED || kind == CKPT_REGION_VVAR ||
	    kind == CKPT_REGION_VVAR_VCLOCK)
		return 0;
	/* The vdso's code is kept (a few KiB) so a restart on a kernel
	 * with a different vdso can keep the old entry points and send
	 * them on to the new ones. */
	if (kind == CKPT_REGION_VDSO)
		return writer_add_extent(s->w, m->start, m->end - m->start);
	if (s->w->chain)
		dirty_pages_note_mapping(m->start, m->end, kind);
	if (image_backed) {
		rc = writer_add_extent(s->w, m->start, m->end - m->start);
		saved = m->end - m->start;
	} else {
		/* a forked copy and the chain writer (image_chain.c)
		 * leave the pages of zeros out themselves */
		s->skip_zero_pages = memory_restores_as_zeros(kind, m->prot) &&
				     !s->w->zero_pages_later && !s->w->chain;
		rc = add_populated_extents(s, kind, m->start, m->end, &saved);
	}
	if (rc < 0)
		goto fail;
	/* Unreadable pages can still hold data (guard pages do not): make
	 * them readable until the data is written. */
	if (saved && !(m->prot & PROT_READ)) {
		if (nunprotected == MAX_UNPROTECTED ||
		    mprotect((void *)(uintptr_t)m->start, m->end - m->start,
			     m->prot | PROT_READ) < 0) {
			rc = -EACCES;
			goto fail;
		}
		unprotected[nunprotected++] = *m;
	}
	return 0;
fail:
	ckpt_fmt(err, errlen, "recording memory %#lx-%#lx %s: %s",
		 (unsigned long)m->start, (unsigned long)m->end, m->name,
		 strerror(-rc));
	return rc;
}

void memory_reprotect(void)
{
	for (int i = 0; i < nunprotected; i++)
		mprotect((void *)(uintptr_t)unprotected[i].start,
			 unprotected[i].end - unprotected[i].start,
			 unprotected[i].prot);
	nunprotected = 0;
}

static struct scan scan_state;

/*
 * The kernel lists the heap as several [heap] areas when its parts cannot
 * merge: the part a fork inherited and the part grown afterwards have
 * different anonymous-memory owners (tmux's daemonized server has two).
 * Extend m over the parts that follow it directly with its protection;
 * returns the line after the last one taken.
 */
static char *join_heap_parts(struct maps_vma *m, char *next)
{
	struct maps_vma n;
	char *after;

	if (strcmp(m->name, "[heap]"))
		return next;
	while (*next) {
		after = strchr(next, '\n');
		if (after)
			*after = 0;
		if (maps_vma_parse(next, &n) < 0 || strcmp(n.name, "[heap]") ||
		    n.start != m->end || n.prot != m->prot ||
		    n.shared != m->shared) {
			if (after)
				*after = '\n';
			break;
		}
		m->end = n.end;
		next = after ? after + 1 : next + strlen(next);
	}
	return next;
}

/*
 * The pages that hold /proc/self/cmdline and environ after a restart: the
 * restart loader kept them from its own initial stack, where the kernel
 * put the saved command line (restart/loader/args_area.c). They are not
 * the program's memory (that has its own copy of the strings, in its
 * saved stack) and would only collide with the next restart's: never
 * saved. Inherited by fork, gone with exec.
 */
static uint64_t args_area_start, args_area_end;

/* Fields first..first+n-1 of /proc/self/stat (numbered as in proc(5)),
 * after the command name in parentheses, which may hold anything. */
static int read_stat_fields(int first, unsigned long *out, int n)
{
	char buf[1024], *p;
	int field = 3;

	if (ckpt_read_small_file("/proc/self/stat", buf, sizeof(buf)) < 0)
		return -EIO;
	p = strrchr(buf, ')');
	for (p = p ? p + 2 : NULL; p && *p && n; field++) {
		if (field >= first) {
			*out++ = strtoul(p, NULL, 10);
			n--;
		}
		p = strchr(p, ' ');
		p = p ? p + 1 : NULL;
	}
	return n ? -EIO : 0;
}

void memory_note_args_area_kept(void)
{
	unsigned long f[4];	/* arg_start arg_end env_start env_end */

	if (read_stat_fields(48, f, 4) < 0 || !f[0] || f[3] <= f[0])
		return;
	args_area_start = f[0] & ~(PAGE - 1);
	args_area_end = (f[3] + PAGE - 1) & ~(PAGE - 1);
}

static int is_args_area(const struct maps_vma *m)
{
	return args_area_end && m->start == args_area_start &&
	       m->end == args_area_end;
}

/* The MAP_SHARED mappings of anonymous or deleted memory (shared anonymous
 * memory, memfds, deleted /dev/shm files, SysV segments): up to max of
 * them into out. The count, or -errno. */
int memory_shared_regions(struct shared_region *out, int max)
{
	char *line, *next;
	struct maps_vma m;
	struct stat st;
	int n = 0, r = read_maps();

	if (r < 0)
		return r;
	for (line = maps_buf; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		else
			next = line + strlen(line);
		if (maps_vma_parse(line, &m) < 0 ||
		    region_kind(&m, &st) != CKPT_REGION_ANON_SHARED)
			continue;
		if (n == max)
			return -E2BIG;
		out[n++] = (struct shared_region){
			.start = m.start, .end = m.end, .offset = m.offset,
			.ino = shared_object_ino(&m), .prot = m.prot,
			.dev = makedev(m.major, m.minor),
			.sysv = is_sysv_mapping(&m),
		};
	}
	return n;
}

/* Call note(path, stat, prot) for every MAP_SHARED mapping of a file
 * that exists (saved by reference). 0 or the first error. */
int memory_shared_file_maps(int (*note)(const char *path,
					const struct stat *st, uint32_t prot))
{
	char *line, *next;
	struct maps_vma m;
	struct stat st;
	int r = read_maps();

	for (line = maps_buf; r == 0 && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		else
			next = line + strlen(line);
		if (maps_vma_parse(line, &m) == 0 &&
		    region_kind(&m, &st) == CKPT_REGION_FILE_SHARED)
			r = note(m.name, &st, m.prot);
	}
	return r;
}

int memory_scan(struct image_writer *w, char *err, size_t errlen)
{
	struct scan *s = &scan_state;
	char *line, *next;
	struct maps_vma m;
	int r;

	nunprotected = 0;
	r = read_maps();
	if (r < 0) {
		ckpt_fmt(err, errlen, "reading /proc/self/maps: %s",
			 strerror(-r));
		return r;
	}
	r = writer_reserve_memory_tables(w);
	if (r < 0) {
		ckpt_fmt(err, errlen, "reserving image tables: %s",
			 strerror(-r));
		return r;
	}
	s->w = w;
	s->prev_end = 0;
	dirty_pages_forget_mappings();
	s->heap_seen = 0;
	s->pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (s->pagemap_fd < 0) {
		r = -errno;
		ckpt_fmt(err, errlen, "open /proc/self/pagemap: %s",
			 strerror(errno));
		return r;
	}
	for (line = maps_buf; *line && r == 0; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		else
			next = line + strlen(line);
		if (maps_vma_parse(line, &m) < 0)
			continue;
		next = join_heap_parts(&m, next);
		/* not saved, but it bounds the reserve of a stack above */
		if (!is_args_area(&m))
			r = save_region(s, &m, err, errlen);
		if (!strcmp(m.name, "[heap]") && s->heap_seen == 1)
			writer_set_brk(w, m.start, syscall(SYS_brk, 0));
		s->prev_end = m.end;
	}
	close(s->pagemap_fd);
	if (r < 0)
		memory_reprotect();
	return r;
}
