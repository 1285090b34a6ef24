// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_inspect: the ELF files a checkpointed process had mapped, read
 * with libelf (inspect_symbols.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "inspect_memory.h"
#include "inspect_symbols.h"

#define DEBUG_DIR	"/usr/lib/debug"

static void read_segments(struct elf_file *f, Elf *elf)
{
	size_t n, i;
	GElf_Phdr ph;

	f->lo = UINT64_MAX;
	if (elf_getphdrnum(elf, &n) < 0)
		return;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &ph))
			continue;
		if (ph.p_type == PT_GNU_EH_FRAME) {
			f->eh_frame_hdr = ph.p_vaddr;
			f->eh_frame_hdr_offset = ph.p_offset;
		}
		if (ph.p_type != PT_LOAD || f->nloads == 16)
			continue;
		f->loads[f->nloads].offset = ph.p_offset;
		f->loads[f->nloads].filesz = ph.p_filesz;
		f->loads[f->nloads++].vaddr = ph.p_vaddr;
		if (ph.p_vaddr < f->lo)
			f->lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > f->hi)
			f->hi = ph.p_vaddr + ph.p_memsz;
	}
}

/* The section of this type (SHT_SYMTAB, SHT_DYNSYM), NULL if none. */
static Elf_Scn *section_of_type(Elf *elf, GElf_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

static Elf_Scn *section_named(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* Of two names for one address, the one people call: no leading '_'
 * ("read" over "__libc_read"), then the shorter. */
static int better_name(const char *a, const char *b)
{
	if ((a[0] == '_') != (b[0] == '_'))
		return a[0] != '_';
	return strlen(a) < strlen(b);
}

static int by_start(const void *a, const void *b)
{
	const struct elf_function *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return better_name(x->name, y->name) ? -1 :
	       better_name(y->name, x->name) ? 1 : 0;
}

/* Sorted, one entry per address (the best name). */
static void sort_functions(struct elf_file *f)
{
	uint64_t i, kept = 0;

	qsort(f->functions, f->nfunctions, sizeof(*f->functions), by_start);
	for (i = 0; i < f->nfunctions; i++)
		if (!kept || f->functions[kept - 1].start !=
			     f->functions[i].start)
			f->functions[kept++] = f->functions[i];
	f->nfunctions = kept;
}

static int is_function(const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_value &&
	       s->st_shndx != SHN_UNDEF;
}

static int read_functions(struct elf_file *f, Elf *elf, GElf_Word type)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section_of_type(elf, type, &sh);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	size_t n = data && sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
	size_t names = 0, i, used = 0;
	GElf_Sym s;

	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		if (gelf_getsym(data, i, &s) && is_function(&s))
			names += strlen(elf_strptr(elf, sh.sh_link, s.st_name) ?:
					"") + 1;
	f->functions = calloc(n, sizeof(*f->functions));
	f->names = malloc(names + 1);
	if (!f->functions || !f->names)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const char *name;

		if (!gelf_getsym(data, i, &s) || !is_function(&s))
			continue;
		name = elf_strptr(elf, sh.sh_link, s.st_name) ?: "";
		strcpy(f->names + used, name);
		f->functions[f->nfunctions].start = s.st_value;
		f->functions[f->nfunctions].size = s.st_size;
		f->functions[f->nfunctions++].name = f->names + used;
		used += strlen(name) + 1;
	}
	sort_functions(f);
	return 1;
}

/* /usr/lib/debug/.build-id/xx/yyyy.debug of the file's GNU build id. */
static int build_id_path(Elf *elf, char *out, size_t len)
{
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE ?
			      elf_getdata(scn, NULL) : NULL;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		while (d && (off = gelf_getnote(d, off, &nh, &name_off,
						&desc_off)) > 0) {
			const unsigned char *id =
				(const unsigned char *)d->d_buf + desc_off;
			size_t used;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_descsz < 2 ||
			    nh.n_descsz > 64)
				continue;
			used = snprintf(out, len, DEBUG_DIR "/.build-id/%02x/",
					id[0]);
			for (size_t i = 1; i < nh.n_descsz && used < len; i++)
				used += snprintf(out + used, len - used, "%02x",
						 id[i]);
			return snprintf(out + used, len - used, ".debug") > 0;
		}
	}
	return 0;
}

/* /usr/lib/debug/DIR/NAME of the file's .gnu_debuglink NAME. */
static int debuglink_path(Elf *elf, const char *path, char *out, size_t len)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section_named(elf, ".gnu_debuglink", &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	char dir[PATH_MAX];

	if (!d || !d->d_size || !memchr(d->d_buf, 0, d->d_size))
		return 0;
	snprintf(dir, sizeof(dir), "%s", path);
	return snprintf(out, len, DEBUG_DIR "%s/%s", dirname(dir),
			(const char *)d->d_buf) < (int)len;
}

/* Line tables of the file at fd, kept open in f when it has some. */
static void keep_dwarf(struct elf_file *f, int fd)
{
	int own;

	if (f->dwarf || fd < 0)
		return;
	own = fcntl(fd, F_DUPFD_CLOEXEC, 0);	/* libdw reads it later */
	if (own < 0)
		return;
	f->dwarf = dwarf_begin(own, DWARF_C_READ);
	if (f->dwarf)
		f->dwarf_fd = own;
	else
		close(own);
}

/* Functions (and line tables) from the separate debug file, when one is
 * installed. */
static int read_debug_functions(struct elf_file *f, Elf *elf)
{
	char path[PATH_MAX];
	int fd = -1, r = 0;
	Elf *dbg;

	if (build_id_path(elf, path, sizeof(path)))
		fd = open_regular_file(path);
	if (fd < 0 && debuglink_path(elf, f->path, path, sizeof(path)))
		fd = open_regular_file(path);
	if (fd < 0)
		return 0;
	dbg = elf_begin(fd, ELF_C_READ, NULL);
	if (dbg)
		r = read_functions(f, dbg, SHT_SYMTAB);
	elf_end(dbg);
	keep_dwarf(f, fd);
	close(fd);
	return r;
}

static void read_elf(struct elf_file *f)
{
	int fd = open_regular_file(f->path);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;

	f->dwarf_fd = -1;
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		f->usable = 1;
		read_segments(f, elf);
		if (!read_debug_functions(f, elf) &&
		    !read_functions(f, elf, SHT_SYMTAB))
			read_functions(f, elf, SHT_DYNSYM);
		keep_dwarf(f, fd);
	}
	elf_end(elf);
	if (fd >= 0)
		close(fd);
}

struct elf_file *elf_file_get(struct elf_file **cache, const char *path)
{
	struct elf_file *f;

	for (f = *cache; f; f = f->next)
		if (!strcmp(f->path, path))
			return f;
	elf_version(EV_CURRENT);
	f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(path))) {
		free(f);
		return NULL;
	}
	read_elf(f);
	f->next = *cache;
	*cache = f;
	return f;
}

void elf_files_free(struct elf_file **cache)
{
	while (*cache) {
		struct elf_file *f = *cache;

		*cache = f->next;
		if (f->dwarf) {
			dwarf_end(f->dwarf);
			close(f->dwarf_fd);
		}
		free(f->functions);
		free(f->names);
		free(f->path);
		free(f);
	}
}

int elf_file_vaddr(const struct elf_file *f, uint64_t off, uint64_t *vaddr)
{
	for (int i = 0; i < f->nloads; i++)
		if (off >= f->loads[i].offset &&
		    off < f->loads[i].offset + f->loads[i].filesz) {
			*vaddr = f->loads[i].vaddr + (off - f->loads[i].offset);
			return 0;
		}
	return -1;
}

const struct elf_function *elf_function_at(const struct elf_file *f,
					   uint64_t vaddr)
{
	uint64_t lo = 0, hi = f->nfunctions;
	const struct elf_function *fn;

	while (lo < hi) {		/* the last start <= vaddr */
		uint64_t mid = lo + (hi - lo) / 2;

		if (f->functions[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	fn = &f->functions[lo - 1];
	return vaddr < fn->start + (fn->size ? fn->size : 1) ? fn : NULL;
}

int elf_source_line(const struct elf_file *f, uint64_t vaddr,
		    const char **file, int *line)
{
	Dwarf_Die cu;
	Dwarf_Line *l;
	const char *path, *base;

	if (!f->dwarf || !dwarf_addrdie(f->dwarf, vaddr, &cu))
		return -1;
	l = dwarf_getsrc_die(&cu, vaddr);
	path = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
	if (!path || dwarf_lineno(l, line) != 0 || *line <= 0)
		return -1;
	base = strrchr(path, '/');
	*file = base ? base + 1 : path;
	return 0;
}
