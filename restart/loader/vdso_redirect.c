// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Restart on another kernel (the CRIU approach): glibc cached pointers
 * into the old vdso, at its old address and with the old kernel's symbol
 * offsets. The old vdso's code (saved by libckpt) goes back to its address
 * and each of its entry points is overwritten with a jump to the function
 * of the same name in this kernel's vdso, or, if this kernel has none,
 * with "return -ENOSYS" (glibc then makes the real system call). The old
 * code never runs, so its data pages ([vvar], ...) may be zero pages.
 *
 * Symbols come from .dynsym and its string table, found through the
 * section headers that every vdso image keeps. All offsets here count
 * from the start of the mapping (the ELF header).
 */
#include <linux/elf.h>
#include "loader.h"

struct vdso_elf {
	const unsigned char *base;
	uint64_t size;
	const Elf64_Sym *syms;
	uint64_t nsyms;
	const char *strs;
	uint64_t strs_size;
	uint64_t bias;		/* st_value - bias = offset in the mapping */
};

/* [off, off + len) inside [0, size), without overflow. */
static int inside(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* The first PT_LOAD maps file offset 0 at the start of the mapping. */
static const char *elf_find_bias(struct vdso_elf *e, const Elf64_Ehdr *eh)
{
	const Elf64_Phdr *ph;
	unsigned i;

	if (eh->e_phentsize != sizeof(*ph) ||
	    !inside(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(*ph), e->size))
		return "its program headers lie outside it";
	ph = (const Elf64_Phdr *)(e->base + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) {
			e->bias = ph[i].p_vaddr - ph[i].p_offset;
			return 0;
		}
	}
	return "it has no PT_LOAD segment";
}

static const char *elf_find_dynsym(struct vdso_elf *e, const Elf64_Ehdr *eh)
{
	const Elf64_Shdr *sh, *str;
	unsigned i;

	if (eh->e_shentsize != sizeof(*sh) ||
	    !inside(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(*sh), e->size))
		return "its section headers lie outside it";
	sh = (const Elf64_Shdr *)(e->base + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		if (sh[i].sh_link >= eh->e_shnum)
			return ".dynsym links to no string table";
		str = &sh[sh[i].sh_link];
		if (!inside(sh[i].sh_offset, sh[i].sh_size, e->size) ||
		    sh[i].sh_offset % 8 ||
		    !inside(str->sh_offset, str->sh_size, e->size) ||
		    !str->sh_size)
			return ".dynsym or its strings lie outside it";
		e->syms = (const Elf64_Sym *)(e->base + sh[i].sh_offset);
		e->nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
		e->strs = (const char *)(e->base + str->sh_offset);
		e->strs_size = str->sh_size;
		if (e->strs[e->strs_size - 1])
			return "its string table is not NUL-terminated";
		return 0;
	}
	return "it has no .dynsym section";
}

/* 0, or why the image is no vdso we can read. */
static const char *elf_open(struct vdso_elf *e, const unsigned char *base,
			    uint64_t size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	const char *why;

	e->base = base;
	e->size = size;
	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return "it is not an ELF image";
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_machine != ARCH_ELF_MACHINE)
		return "it is an ELF image of another architecture";
	why = elf_find_bias(e, eh);
	return why ? why : elf_find_dynsym(e, eh);
}

static const char *sym_name(const struct vdso_elf *e, const Elf64_Sym *s)
{
	return s->st_name < e->strs_size ? e->strs + s->st_name : "";
}

/* A function the vdso exports (clock_gettime and __vdso_clock_gettime
 * are two names of one entry point; both are handled). */
static int is_entry_point(const Elf64_Sym *s)
{
	return ELF64_ST_TYPE(s->st_info) == STT_FUNC &&
	       ELF64_ST_BIND(s->st_info) != STB_LOCAL &&
	       s->st_shndx != SHN_UNDEF && s->st_shndx < SHN_LORESERVE;
}

/* Offset of name's entry point in e, or VDSO_ENTRY_MISSING. */
static uint64_t entry_offset(const struct vdso_elf *e, const char *name)
{
	const Elf64_Sym *s;
	uint64_t i;

	if (!e)
		return VDSO_ENTRY_MISSING;
	for (i = 0; i < e->nsyms; i++) {
		s = &e->syms[i];
		if (is_entry_point(s) && str_eq(sym_name(e, s), name) &&
		    inside(s->st_value - e->bias, 1, e->size))
			return s->st_value - e->bias;
	}
	return VDSO_ENTRY_MISSING;
}

static void add_patch(struct vdso_plan *p, const struct vdso_elf *old,
		      const Elf64_Sym *s, uint64_t new_off)
{
	uint64_t need = new_off == VDSO_ENTRY_MISSING ? ARCH_VDSO_ENOSYS_SIZE
						      : ARCH_VDSO_JUMP_SIZE;
	uint64_t off = s->st_value - old->bias;

	if (!inside(off, need, old->size))
		loader_fail("vdso: the saved vdso's %s at offset %lx lies "
			    "outside it", sym_name(old, s), off);
	if (s->st_size < need)
		loader_fail("vdso: the saved vdso's %s is %lu bytes, too short "
			    "to be redirected (%lu bytes needed)",
			    sym_name(old, s), (uint64_t)s->st_size, need);
	if (p->npatches == LOADER_MAX_VDSO_ENTRIES)
		loader_fail("vdso: the saved vdso exports more than %d "
			    "functions", LOADER_MAX_VDSO_ENTRIES);
	p->patch[p->npatches].old_off = off;
	p->patch[p->npatches].new_off = new_off;
	p->npatches++;
}

/*
 * Before the point of no return: read both symbol tables and decide, for
 * every entry point of the old vdso (p->old_code), where it goes in ours
 * (cur, 0 if this kernel maps no vdso). Fails if either cannot be read or
 * an entry point is too short for its redirection.
 */
void vdso_plan_redirect(struct vdso_plan *p, uint64_t old_size,
			const unsigned char *cur, uint64_t cur_size)
{
	struct vdso_elf old, now;
	const char *why;
	uint64_t i;

	why = elf_open(&old, p->old_code, old_size);
	if (why)
		loader_fail("vdso: the saved vdso cannot be redirected: %s",
			    why);
	if (cur) {
		why = elf_open(&now, cur, cur_size);
		if (why)
			loader_fail("vdso: this kernel's vdso cannot be read: "
				    "%s", why);
	}
	p->npatches = 0;
	for (i = 0; i < old.nsyms; i++)
		if (is_entry_point(&old.syms[i]))
			add_patch(p, &old, &old.syms[i],
				  entry_offset(cur ? &now : 0,
					       sym_name(&old, &old.syms[i])));
}

/*
 * After the regions are in place: overwrite the entry points in copy (the
 * old vdso, writable at its saved address) to reach ours at cur_start.
 * Stubs first, jumps last: if one entry point has two names and only one
 * exists here, the jump wins.
 */
void vdso_redirect(const struct vdso_plan *p, unsigned char *copy,
		   uint64_t cur_start)
{
	const struct vdso_patch *q;
	unsigned i;

	for (i = 0; i < p->npatches; i++) {
		q = &p->patch[i];
		if (q->new_off == VDSO_ENTRY_MISSING)
			arch_write_vdso_enosys(copy + q->old_off);
	}
	for (i = 0; i < p->npatches; i++) {
		q = &p->patch[i];
		if (q->new_off != VDSO_ENTRY_MISSING)
			arch_write_vdso_jump(copy + q->old_off,
					     cur_start + q->new_off);
	}
}
