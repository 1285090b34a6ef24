// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * mkimage: write a synthetic checkpoint image of the self-test's restored
 * program (restored.c, built as restored.bin), so the loader can be tested
 * without libckpt. Regions of every kind the loader maps: code and data
 * with saved pages, a private file mapping with a dirty page, a shared
 * read-only file mapping, shared anonymous memory, a deleted-file mapping,
 * a sparse 1 GiB NORESERVE region, a guard page, a stack, and this
 * kernel's [vvar]/[vdso] set, with or without the vdso's code (as libckpt
 * saves it), or another kernel's set (--old-vdso: a crafted vdso whose
 * entry points lie elsewhere and trap if they ever run unredirected).
 *
 * mkimage --out IMG --restored BLOB --datafile PATH [--exit-code N]
 *         [--message TEXT] [--cover-top] [--no-vdso] [--vdso-code]
 *         [--vdso-code-modified] [--old-vdso] [--old-vdso-short]
 *         [--xcr0 HEX] [--xcr0-in-use HEX]
 */
#include <cpuid.h>
#include <elf.h>
#include <err.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/hash.h"
#include "ckpt/image.h"
#include "../loader_abi.h"
#include "selftest.h"

#define PAGE		4096ULL
#define MAX_REGIONS	32
#define MAX_EXTENTS	32

struct builder {
	struct ckpt_region regions[MAX_REGIONS];
	unsigned nregions;
	struct ckpt_extent extents[MAX_EXTENTS];
	const void *extent_data[MAX_EXTENTS];
	unsigned nextents;
	char strings[8192];
	uint32_t strings_size;
	struct st_params params;
	/* stdin..stderr, then with --saved-content a deleted file and a
	 * pipe with content, and a file record with content */
	struct ckpt_fd_info fds[5];
	const char *fd_content[5];
	unsigned nfds;
	struct ckpt_file_record file;
	const char *file_content;
	unsigned nfiles;
};

/* What the image says about the kernel's special mappings. */
enum vdso_variant {
	VDSO_LIVE,		/* this kernel's set, no code (older images) */
	VDSO_NONE,		/* --no-vdso */
	VDSO_CODE,		/* --vdso-code: with this vdso's code */
	VDSO_CODE_MODIFIED,	/* --vdso-code-modified: one byte differs */
	VDSO_OLD,		/* --old-vdso: another kernel's */
	VDSO_OLD_SHORT,		/* --old-vdso-short: one entry too short */
};

struct options {
	const char *out, *restored, *datafile, *message;
	int exit_code, cover_top, saved_content;
	enum vdso_variant vdso;
	uint64_t xcr0, xcr0_in_use;
};

static uint32_t add_string(struct builder *b, const char *s)
{
	uint32_t off = b->strings_size;
	size_t len = strlen(s) + 1;

	if (off + len > sizeof(b->strings))
		errx(1, "string table full");
	memcpy(b->strings + off, s, len);
	b->strings_size += len;
	return off;
}

static struct ckpt_region *add_region(struct builder *b, uint64_t start,
				      uint64_t len, uint32_t prot,
				      uint32_t kind, const char *name)
{
	struct ckpt_region *r = &b->regions[b->nregions++];

	if (b->nregions > MAX_REGIONS)
		errx(1, "too many regions");
	memset(r, 0, sizeof(*r));
	r->start = start;
	r->end = start + len;
	r->prot = prot;
	r->kind = kind;
	r->first_extent = b->nextents;
	r->name = name ? add_string(b, name) : 0;
	return r;
}

/* Extents of a region must follow their region's add_region(). */
static void add_extent(struct builder *b, struct ckpt_region *r,
		       uint64_t addr, const void *data, uint64_t len)
{
	struct ckpt_extent *e = &b->extents[b->nextents];

	if (b->nextents == MAX_EXTENTS)
		errx(1, "too many extents");
	e->addr = addr;
	e->len = len;
	e->hash = ckpt_hash64(data, len, 0);
	e->encoding = CKPT_EXTENT_RAW;
	e->stored_len = len;
	b->extent_data[b->nextents++] = data;
	r->nextents++;
}

static void add_check(struct builder *b, uint64_t addr, const void *data,
		      uint64_t len)
{
	struct st_check *c = &b->params.checks[b->params.nchecks++];

	if (b->params.nchecks > ST_MAX_CHECKS)
		errx(1, "too many checks");
	c->addr = addr;
	c->len = len;
	c->hash = ckpt_hash64(data, len, 0);
}

static void *pattern(uint64_t len, unsigned seed)
{
	unsigned char *p = malloc(len);
	uint64_t i;

	if (!p)
		err(1, "malloc");
	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 12));
	return p;
}

static void *read_file(const char *path, size_t *len)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		err(1, "%s", path);
	p = malloc(st.st_size);
	if (!p || read(fd, p, st.st_size) != st.st_size)
		err(1, "%s: read", path);
	close(fd);
	*len = st.st_size;
	return p;
}

static void add_code(struct builder *b, const char *blob_path,
		     struct ckpt_image_header *h)
{
	const struct loader_blob_header *bh;
	unsigned char *rw;
	size_t len;
	unsigned char *blob = read_file(blob_path, &len);
	struct ckpt_region *r;

	bh = (const void *)blob;
	if (len < sizeof(*bh) || bh->magic != LOADER_BLOB_MAGIC)
		errx(1, "%s: not a blob", blob_path);
	r = add_region(b, ST_CODE_ADDR, bh->rx_end, PROT_READ | PROT_EXEC,
		       CKPT_REGION_ANON, NULL);
	unsigned char *rx = calloc(1, bh->rx_end);

	memcpy(rx, blob, len < bh->rx_end ? len : bh->rx_end);
	add_extent(b, r, ST_CODE_ADDR, rx, bh->rx_end);
	add_check(b, ST_CODE_ADDR, rx, bh->rx_end);
	if (bh->rw_end > bh->rx_end) {
		rw = calloc(1, bh->rw_end - bh->rx_end);
		if (len > bh->rx_end)
			memcpy(rw, blob + bh->rx_end, len - bh->rx_end);
		r = add_region(b, ST_CODE_ADDR + bh->rx_end,
			       bh->rw_end - bh->rx_end,
			       PROT_READ | PROT_WRITE, CKPT_REGION_ANON, NULL);
		add_extent(b, r, r->start, rw, bh->rw_end - bh->rx_end);
	}
	h->restore_entry = ST_CODE_ADDR + bh->entry;
}

static void write_datafile(const char *path, void **content)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	*content = pattern(3 * PAGE, 11);
	if (fd < 0 || write(fd, *content, 3 * PAGE) != (ssize_t)(3 * PAGE))
		err(1, "%s", path);
	close(fd);
}

static void file_region_stat(struct ckpt_region *r, const char *path)
{
	struct stat st;

	if (stat(path, &st))
		err(1, "%s", path);
	r->file_size = st.st_size;
	r->file_mtime_ns = st.st_mtim.tv_sec * 1000000000ULL +
			   st.st_mtim.tv_nsec;
	r->file_ino = st.st_ino;
}

static void add_files(struct builder *b, const char *datafile)
{
	unsigned char *file, *dirty = pattern(PAGE, 3), *expect;
	struct ckpt_region *r;

	write_datafile(datafile, (void **)&file);
	/* Private, offset 4096, page 1 dirty. */
	r = add_region(b, ST_FILE_PRIV_ADDR, 2 * PAGE, PROT_READ | PROT_WRITE,
		       CKPT_REGION_FILE_PRIVATE, datafile);
	r->file_offset = PAGE;
	file_region_stat(r, datafile);
	add_extent(b, r, ST_FILE_PRIV_ADDR + PAGE, dirty, PAGE);
	expect = malloc(2 * PAGE);
	memcpy(expect, file + PAGE, PAGE);
	memcpy(expect + PAGE, dirty, PAGE);
	add_check(b, ST_FILE_PRIV_ADDR, expect, 2 * PAGE);
	/* Shared, read-only, whole file, no data. */
	r = add_region(b, ST_FILE_SHARED_ADDR, 3 * PAGE, PROT_READ,
		       CKPT_REGION_FILE_SHARED, datafile);
	file_region_stat(r, datafile);
	add_check(b, ST_FILE_SHARED_ADDR, file, 3 * PAGE);
}

static void add_anon(struct builder *b)
{
	unsigned char *shared = pattern(2 * PAGE, 5), *gone = pattern(PAGE, 6);
	unsigned char *first = pattern(PAGE, 7), *mid = pattern(2 * PAGE, 8);
	static unsigned char zeros[PAGE];
	uint64_t mid_addr = ST_SPARSE_ADDR + ST_SPARSE_SIZE / 2 + 2 * PAGE;
	struct ckpt_region *r;

	r = add_region(b, ST_ANON_SHARED_ADDR, 2 * PAGE, PROT_READ | PROT_WRITE,
		       CKPT_REGION_ANON_SHARED, "/dev/zero (deleted)");
	add_extent(b, r, r->start, shared, 2 * PAGE);
	add_check(b, r->start, shared, 2 * PAGE);

	r = add_region(b, ST_DELETED_ADDR, PAGE, PROT_READ,
		       CKPT_REGION_DELETED_PRIVATE, "/tmp/gone (deleted)");
	add_extent(b, r, r->start, gone, PAGE);
	add_check(b, r->start, gone, PAGE);

	r = add_region(b, ST_SPARSE_ADDR, ST_SPARSE_SIZE, PROT_READ | PROT_WRITE,
		       CKPT_REGION_ANON, NULL);
	r->flags = CKPT_REGION_F_NORESERVE;
	add_extent(b, r, ST_SPARSE_ADDR, first, PAGE);
	add_extent(b, r, mid_addr, mid, 2 * PAGE);
	add_check(b, ST_SPARSE_ADDR, first, PAGE);
	add_check(b, ST_SPARSE_ADDR + PAGE, zeros, PAGE);
	add_check(b, mid_addr, mid, 2 * PAGE);
	add_check(b, ST_SPARSE_ADDR + ST_SPARSE_SIZE - PAGE, zeros, PAGE);

	add_region(b, ST_GUARD_ADDR, PAGE, PROT_NONE, CKPT_REGION_ANON, NULL);
	r = add_region(b, ST_STACK_ADDR, ST_STACK_SIZE, PROT_READ | PROT_WRITE,
		       CKPT_REGION_STACK, "[stack]");
	r->flags = CKPT_REGION_F_GROWSDOWN;
}

/* This kernel's vdso code, as libckpt saves it; "modified": as if from a
 * kernel whose vdso differs only in one byte of padding at the end. */
static void add_vdso_code(struct builder *b, struct ckpt_region *r,
			  int modified)
{
	uint64_t len = r->end - r->start;
	unsigned char *code = malloc(len);

	if (!code)
		err(1, "malloc");
	memcpy(code, (const void *)r->start, len);
	if (modified)
		code[len - 1] ^= 0x5a;
	add_extent(b, r, r->start, code, len);
}

/* This kernel's special mappings, as a checkpoint here would save them. */
static void add_specials(struct builder *b, enum vdso_variant v,
			 uint64_t *lo, uint64_t *hi)
{
	struct ckpt_region *r;
	unsigned nzero = 0;
	char line[512], name[256];
	unsigned long long s, e;
	uint32_t kind;
	FILE *f = fopen("/proc/self/maps", "r");

	*lo = ~0ULL;
	*hi = 0;
	if (!f)
		err(1, "/proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		name[0] = 0;
		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %255s", &s, &e,
			   name) < 3)
			continue;
		if (!strcmp(name, "[vdso]"))
			kind = CKPT_REGION_VDSO;
		else if (!strcmp(name, "[vvar]"))
			kind = CKPT_REGION_VVAR;
		else if (!strcmp(name, "[vvar_vclock]"))
			kind = CKPT_REGION_VVAR_VCLOCK;
		else
			continue;
		r = add_region(b, s, e - s, kind == CKPT_REGION_VDSO ?
			       PROT_READ | PROT_EXEC : PROT_READ, kind, name);
		if (kind == CKPT_REGION_VDSO)
			b->params.vdso = s;
		if (kind == CKPT_REGION_VDSO && v != VDSO_LIVE)
			add_vdso_code(b, r, v == VDSO_CODE_MODIFIED);
		/* Redirected: the old data pages become zero pages. */
		if (kind != CKPT_REGION_VDSO && v == VDSO_CODE_MODIFIED &&
		    nzero < 2)
			b->params.vvar_zero[nzero++] = s;
		*lo = s < *lo ? s : *lo;
		*hi = e > *hi ? e : *hi;
	}
	fclose(f);
}

/*
 * Another kernel's vdso: an ELF with .dynsym and its strings (found through
 * the section headers, as in a real vdso), linked at ST_OLD_VDSO_VADDR like
 * the prelinked vdsos of old kernels. Its entry points sit at offsets this
 * kernel's vdso does not use, and are int3 throughout: run unredirected,
 * they trap. __vdso_bogus exists on no kernel: it must return -ENOSYS.
 */
static const char *const old_vdso_names[] = {
	"__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time",
	"__vdso_getcpu", "__vdso_clock_getres", "__vdso_bogus",
	"clock_gettime", "gettimeofday", "time", "getcpu", "clock_getres",
};
#define OLD_VDSO_ENTRIES	6	/* the rest are weak aliases */
#define OLD_VDSO_TEXT		0x1000	/* entry i at TEXT + i * 0x80 */

static uint32_t put_name(char *strtab, uint32_t *used, const char *name)
{
	uint32_t off = *used;

	strcpy(strtab + off, name);
	*used += strlen(name) + 1;
	return off;
}

static unsigned char *make_old_vdso(int one_short)
{
	unsigned char *v = calloc(1, ST_OLD_VDSO_SIZE);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)v;
	Elf64_Phdr *ph = (Elf64_Phdr *)(v + sizeof(*eh));
	Elf64_Shdr *sh = (Elf64_Shdr *)(v + 0x200);
	Elf64_Sym *sym = (Elf64_Sym *)(v + 0x300);
	char *str = (char *)(v + 0x600);
	uint32_t used = 1, n = 1, i, entry;
	uint64_t text_len = OLD_VDSO_ENTRIES * 0x80;

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = 0x200;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 4;
	*ph = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
		.p_vaddr = ST_OLD_VDSO_VADDR, .p_paddr = ST_OLD_VDSO_VADDR,
		.p_filesz = ST_OLD_VDSO_SIZE, .p_memsz = ST_OLD_VDSO_SIZE,
		.p_align = PAGE };
	for (i = 0; i < sizeof(old_vdso_names) / sizeof(*old_vdso_names);
	     i++, n++) {
		entry = i % OLD_VDSO_ENTRIES;
		if (i >= OLD_VDSO_ENTRIES)	/* aliases: name without __vdso_ */
			entry = i - OLD_VDSO_ENTRIES;
		sym[n].st_name = put_name(str, &used, old_vdso_names[i]);
		sym[n].st_info = ELF64_ST_INFO(i < OLD_VDSO_ENTRIES ?
					       STB_GLOBAL : STB_WEAK, STT_FUNC);
		sym[n].st_shndx = 3;
		sym[n].st_value = ST_OLD_VDSO_VADDR + OLD_VDSO_TEXT +
				  entry * 0x80;
		sym[n].st_size = one_short && entry == 3 ? 4 : 0x80;
	}
	/* Not a function: must be left alone. */
	sym[n].st_name = put_name(str, &used, "LINUX_2.6");
	sym[n].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
	sym[n++].st_shndx = SHN_ABS;
	memset(v + OLD_VDSO_TEXT, 0xcc, text_len);

	sh[1] = (Elf64_Shdr){ .sh_type = SHT_DYNSYM, .sh_flags = SHF_ALLOC,
		.sh_addr = ST_OLD_VDSO_VADDR + 0x300, .sh_offset = 0x300,
		.sh_size = n * sizeof(*sym), .sh_link = 2, .sh_info = 1,
		.sh_addralign = 8, .sh_entsize = sizeof(*sym) };
	sh[2] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_flags = SHF_ALLOC,
		.sh_addr = ST_OLD_VDSO_VADDR + 0x600, .sh_offset = 0x600,
		.sh_size = used, .sh_addralign = 1 };
	sh[3] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS,
		.sh_flags = SHF_ALLOC | SHF_EXECINSTR,
		.sh_addr = ST_OLD_VDSO_VADDR + OLD_VDSO_TEXT,
		.sh_offset = OLD_VDSO_TEXT, .sh_size = text_len,
		.sh_addralign = 16 };
	return v;
}

/* Another kernel's set: [vvar] 3 pages, [vvar_vclock] 1, [vdso] 2. */
static void add_old_specials(struct builder *b, int one_short)
{
	struct ckpt_region *r;

	add_region(b, ST_OLD_VVAR_ADDR, 3 * PAGE, PROT_READ, CKPT_REGION_VVAR,
		   "[vvar]");
	add_region(b, ST_OLD_VCLOCK_ADDR, PAGE, PROT_READ,
		   CKPT_REGION_VVAR_VCLOCK, "[vvar_vclock]");
	r = add_region(b, ST_OLD_VDSO_ADDR, ST_OLD_VDSO_SIZE,
		       PROT_READ | PROT_EXEC, CKPT_REGION_VDSO, "[vdso]");
	add_extent(b, r, r->start, make_old_vdso(one_short), ST_OLD_VDSO_SIZE);
	b->params.vdso = ST_OLD_VDSO_ADDR;
	b->params.vdso_bogus = 1;
	b->params.vvar_zero[0] = ST_OLD_VVAR_ADDR;
	b->params.vvar_zero[1] = ST_OLD_VCLOCK_ADDR;
}

/* Sparse regions over the top of user space, around the vdso set. */
static void add_cover(struct builder *b, uint64_t lo, uint64_t hi)
{
	struct ckpt_region *r;

	if (lo > hi) {
		lo = ST_COVER_END;
		hi = ST_COVER_END;
	}
	if (lo > ST_COVER_START) {
		r = add_region(b, ST_COVER_START, lo - ST_COVER_START,
			       PROT_READ | PROT_WRITE, CKPT_REGION_ANON, NULL);
		r->flags = CKPT_REGION_F_NORESERVE;
	}
	if (hi < ST_COVER_END && hi >= ST_COVER_START) {
		r = add_region(b, hi, ST_COVER_END - hi, PROT_READ | PROT_WRITE,
			       CKPT_REGION_ANON, NULL);
		r->flags = CKPT_REGION_F_NORESERVE;
	}
}

static uint64_t this_xcr0(void)
{
	unsigned a, bx, c, d, lo, hi;

	if (!__get_cpuid(1, &a, &bx, &c, &d) || !(c & bit_OSXSAVE))
		return 3;
	__asm__ volatile ("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

static int by_start(const void *a, const void *b)
{
	const struct ckpt_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void write_all_at(int fd, const void *p, uint64_t len, uint64_t off)
{
	if (pwrite(fd, p, len, off) != (ssize_t)len)
		err(1, "write");
}

static void add_fd(struct builder *b, int fd, uint32_t kind,
		   const char *path, const char *content)
{
	struct ckpt_fd_info *f = &b->fds[b->nfds];

	memset(f, 0, sizeof(*f));
	f->fd = fd;
	f->kind = kind;
	f->flags = O_RDWR;
	f->offset = -1;
	f->path = path ? add_string(b, path) : 0;
	if (kind == CKPT_FD_PIPE)
		f->pipe_size = 65536;
	b->fd_content[b->nfds++] = content;
}

/* A deleted file and a pipe with content saved, and a file on temporary
 * storage saved with its record: the seeds of tests/fuzz/fuzz_image.c.
 * Not for restarting (ckpt_restart would put the file back). */
static void add_saved_content(struct builder *b, const char *datafile)
{
	static char tmp_path[4096];
	static const char deleted[] = "the content of a file deleted while "
				      "open\n", tmp[] = "a temporary file\n";

	add_fd(b, 3, CKPT_FD_FILE_DELETED, "/tmp/selftest-in (deleted)",
	       deleted);
	b->fds[3].offset = 4;
	add_fd(b, 4, CKPT_FD_PIPE, "pipe:[4242]", "in flight");
	snprintf(tmp_path, sizeof(tmp_path), "%s.tmp", datafile);
	b->file.path = add_string(b, tmp_path);
	b->file.flags = CKPT_FILE_F_TEMPORARY | CKPT_FILE_F_WRITTEN |
			CKPT_FILE_F_SAVED | CKPT_FILE_F_CONTENT;
	b->file.mode = 0600;
	b->file.size = strlen(tmp);
	b->file_content = tmp;
	b->nfiles = 1;
}

static uint64_t page_up(uint64_t x)
{
	return (x + PAGE - 1) & ~(PAGE - 1);
}

/* Content saved with fd and file records after the extents, hashed. */
static uint64_t lay_out_contents(struct builder *b, uint64_t data)
{
	for (unsigned i = 0; i < b->nfds; i++) {
		const char *c = b->fd_content[i];

		if (!c)
			continue;
		b->fds[i].data_offset = data = page_up(data);
		b->fds[i].data_size = strlen(c);
		b->fds[i].data_hash = ckpt_hash64(c, strlen(c), 0);
		data += strlen(c);
	}
	if (b->nfiles) {
		b->file.data_offset = data = page_up(data);
		b->file.data_hash = ckpt_hash64(b->file_content, b->file.size,
						0);
		data += b->file.size;
	}
	return page_up(data);
}

static void write_contents(const struct builder *b, int fd)
{
	for (unsigned i = 0; i < b->nfds; i++)
		if (b->fd_content[i])
			write_all_at(fd, b->fd_content[i], b->fds[i].data_size,
				     b->fds[i].data_offset);
	if (b->nfiles)
		write_all_at(fd, b->file_content, b->file.size,
			     b->file.data_offset);
}

static void write_image(struct builder *b, struct ckpt_image_header *h,
			const char *out)
{
	uint64_t off = CKPT_HEADER_SIZE, data;
	unsigned char *meta;
	unsigned i;
	struct ckpt_thread_info thread = { .vtid = getpid(), .is_main = 1,
		.tls = h->restore_tls, .sp = h->restore_stack_top,
		.pc = h->restore_entry };
	struct ckpt_thread_signals thread_signals = { .vtid = getpid(),
		.blocked = 1ULL << (SIGUSR2 - 1),
		.pending = 1ULL << (SIGUSR2 - 1) };
	static struct ckpt_signal_state signals;
	int fd;

	/* version 7's signal state: a handler (the entry, as code), an
	 * ignored signal, one pending for the process */
	signals.action[SIGUSR1 - 1].handler = h->restore_entry;
	signals.action[SIGUSR1 - 1].flags = SA_SIGINFO | SA_RESTART;
	signals.action[SIGUSR1 - 1].mask = 1ULL << (SIGTERM - 1);
	signals.action[SIGPIPE - 1].handler = (uintptr_t)SIG_IGN;
	signals.process_pending = 1ULL << (SIGWINCH - 1);
	h->ckpt_signal = 64;

	h->nregions = b->nregions;
	h->nextents = b->nextents;
	h->nthreads = 1;
	h->nfds = b->nfds;
	h->nfiles = b->nfiles;
	h->meta_offset = off;
	h->regions_offset = off;
	off += b->nregions * sizeof(*b->regions);
	h->extents_offset = off;
	off += b->nextents * sizeof(*b->extents);
	h->threads_offset = off;
	off += sizeof(thread);
	h->fds_offset = off;
	off += b->nfds * sizeof(*b->fds);
	h->files_offset = off;
	off += b->nfiles * sizeof(b->file);
	h->signals_offset = off;
	h->nthread_signals = 1;
	off += sizeof(signals) + sizeof(thread_signals);
	h->strings_offset = off;
	h->strings_size = b->strings_size;
	off += b->strings_size;
	h->meta_size = off - h->meta_offset;
	data = h->data_offset = page_up(off);
	for (i = 0; i < b->nextents; i++) {
		b->extents[i].file_offset = data;
		data += b->extents[i].len;
	}
	h->image_size = lay_out_contents(b, data);

	meta = calloc(1, h->meta_size);
	memcpy(meta, b->regions, b->nregions * sizeof(*b->regions));
	memcpy(meta + h->extents_offset - h->meta_offset, b->extents,
	       b->nextents * sizeof(*b->extents));
	memcpy(meta + h->threads_offset - h->meta_offset, &thread,
	       sizeof(thread));
	memcpy(meta + h->fds_offset - h->meta_offset, b->fds,
	       b->nfds * sizeof(*b->fds));
	memcpy(meta + h->files_offset - h->meta_offset, &b->file,
	       b->nfiles * sizeof(b->file));
	memcpy(meta + h->signals_offset - h->meta_offset, &signals,
	       sizeof(signals));
	memcpy(meta + h->signals_offset + sizeof(signals) - h->meta_offset,
	       &thread_signals, sizeof(thread_signals));
	memcpy(meta + h->strings_offset - h->meta_offset, b->strings,
	       b->strings_size);
	h->meta_hash = ckpt_hash64(meta, h->meta_size, 0);
	h->header_hash = 0;
	h->header_hash = ckpt_hash64(h, sizeof(*h), 0);

	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		err(1, "%s", out);
	if (ftruncate(fd, h->image_size))
		err(1, "%s: truncate", out);
	write_all_at(fd, h, sizeof(*h), 0);
	write_all_at(fd, meta, h->meta_size, h->meta_offset);
	for (i = 0; i < b->nextents; i++)
		write_all_at(fd, b->extent_data[i], b->extents[i].len,
			     b->extents[i].file_offset);
	write_contents(b, fd);
	close(fd);
}

static void parse(int argc, char **argv, struct options *o)
{
	static const struct option opts[] = {
		{ "out", 1, 0, 'o' }, { "restored", 1, 0, 'r' },
		{ "datafile", 1, 0, 'd' }, { "exit-code", 1, 0, 'e' },
		{ "message", 1, 0, 'm' }, { "cover-top", 0, 0, 'c' },
		{ "no-vdso", 0, 0, 'n' }, { "vdso-code", 0, 0, 'v' },
		{ "vdso-code-modified", 0, 0, 'V' }, { "old-vdso", 0, 0, 'O' },
		{ "old-vdso-short", 0, 0, 'S' }, { "xcr0", 1, 0, 'x' },
		{ "xcr0-in-use", 1, 0, 'u' }, { "saved-content", 0, 0, 's' },
		{ 0 },
	};
	int c;

	o->message = "selftest: restored program ran, all checks passed\n";
	o->exit_code = 42;
	o->xcr0 = this_xcr0();
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o->out = optarg; break;
		case 'r': o->restored = optarg; break;
		case 'd': o->datafile = optarg; break;
		case 'e': o->exit_code = atoi(optarg); break;
		case 'm': o->message = optarg; break;
		case 'c': o->cover_top = 1; break;
		case 'n': o->vdso = VDSO_NONE; break;
		case 'v': o->vdso = VDSO_CODE; break;
		case 'V': o->vdso = VDSO_CODE_MODIFIED; break;
		case 'O': o->vdso = VDSO_OLD; break;
		case 'S': o->vdso = VDSO_OLD_SHORT; break;
		case 'x': o->xcr0 = strtoull(optarg, NULL, 16); break;
		case 'u': o->xcr0_in_use = strtoull(optarg, NULL, 16); break;
		case 's': o->saved_content = 1; break;
		default: exit(2);
		}
	}
	if (!o->out || !o->restored || !o->datafile || o->datafile[0] != '/')
		errx(2, "usage: mkimage --out IMG --restored BLOB --datafile "
		     "/ABS/PATH [--exit-code N] [--message TEXT] [--cover-top]"
		     " [--no-vdso|--vdso-code|--vdso-code-modified|--old-vdso|"
		     "--old-vdso-short] [--xcr0 HEX] [--xcr0-in-use HEX] "
		     "[--saved-content]");
}

int main(int argc, char **argv)
{
	static struct builder b;
	struct ckpt_image_header h = { 0 };
	struct options o = { 0 };
	uint64_t lo = ~0ULL, hi = 0;
	struct ckpt_region *r;
	unsigned char *page;

	parse(argc, argv, &o);
	add_string(&b, "");		/* offset 0 = no name */
	for (int fd = 0; fd < 3; fd++)
		add_fd(&b, fd, CKPT_FD_STDIO_INHERIT, NULL, NULL);
	if (o.saved_content)
		add_saved_content(&b, o.datafile);
	memcpy(h.magic, CKPT_IMAGE_MAGIC, 8);
	h.version = CKPT_IMAGE_VERSION;
	h.header_size = sizeof(h);
	h.arch = CKPT_ARCH_X86_64;
	h.page_size = PAGE;
	h.cpu_features = o.xcr0;
	h.cpu_features_in_use = o.xcr0_in_use;
	h.vpid = getpid();
	h.vppid = getppid();
	h.generation = 1;
	h.ckpt_time_ns = time(NULL) * 1000000000ULL;
	snprintf(h.program, sizeof(h.program), "selftest");
	snprintf(h.unique_id, sizeof(h.unique_id), "selftest-%d", getpid());

	add_code(&b, o.restored, &h);
	add_files(&b, o.datafile);
	add_anon(&b);
	if (o.vdso == VDSO_OLD || o.vdso == VDSO_OLD_SHORT)
		add_old_specials(&b, o.vdso == VDSO_OLD_SHORT);
	else if (o.vdso != VDSO_NONE)
		add_specials(&b, o.vdso, &lo, &hi);
	if (o.cover_top)
		add_cover(&b, lo, hi);

	b.params.magic = ST_PARAMS_MAGIC;
	b.params.exit_code = o.exit_code;
	b.params.tls = ST_PARAMS_ADDR + 2048;
	b.params.brk_end = ST_PARAMS_ADDR + PAGE;
	b.params.xcr0 = this_xcr0();
	snprintf(b.params.message, sizeof(b.params.message), "%s", o.message);
	page = calloc(1, PAGE);
	memcpy(page, &b.params, sizeof(b.params));
	r = add_region(&b, ST_PARAMS_ADDR, PAGE, PROT_READ | PROT_WRITE,
		       CKPT_REGION_HEAP, "[heap]");
	add_extent(&b, r, ST_PARAMS_ADDR, page, PAGE);
	h.restore_tls = b.params.tls;
	h.restore_stack_top = ST_STACK_ADDR + ST_STACK_SIZE;
	h.flags = CKPT_IMG_F_HAS_BRK;
	h.brk_start = ST_PARAMS_ADDR;
	h.brk_end = ST_PARAMS_ADDR + PAGE;

	qsort(b.regions, b.nregions, sizeof(*b.regions), by_start);
	write_image(&b, &h, o.out);
	return 0;
}
