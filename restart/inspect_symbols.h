/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ELF files mapped by a checkpointed process, read with libelf for
 * ckpt_inspect: where each file's segments go (to turn an address into
 * the file's own virtual address), its .eh_frame_hdr (for libunwind) and
 * its function symbols (.symtab, else .dynsym; a separate debug file
 * found by build-id or .gnu_debuglink under /usr/lib/debug is preferred
 * when it exists), and source lines from its DWARF line tables (libdw),
 * in the debug file or the file itself.
 */
#ifndef CKPT_RESTART_INSPECT_SYMBOLS_H
#define CKPT_RESTART_INSPECT_SYMBOLS_H

#include <stdint.h>
#include <elfutils/libdw.h>

struct elf_function {
	uint64_t start, size;		/* the file's virtual addresses */
	const char *name;
};

struct elf_file {
	char *path;
	int usable;			/* an ELF file we could read */
	uint64_t eh_frame_hdr;		/* vaddr of PT_GNU_EH_FRAME, 0 none */
	uint64_t eh_frame_hdr_offset;	/* its file offset */
	uint64_t lo, hi;		/* span of the PT_LOAD segments */
	struct { uint64_t offset, filesz, vaddr; } loads[16];
	int nloads;
	struct elf_function *functions;	/* sorted by start */
	uint64_t nfunctions;
	char *names;			/* the names, copied */
	Dwarf *dwarf;			/* debug info with line tables, or NULL */
	int dwarf_fd;			/* its file, open while dwarf is */
	struct elf_file *next;
};

/* The file at path, read once and kept (NULL only without memory). */
struct elf_file *elf_file_get(struct elf_file **cache, const char *path);
void elf_files_free(struct elf_file **cache);
/* The file's virtual address of the byte at file offset off, or -1. */
int elf_file_vaddr(const struct elf_file *f, uint64_t off, uint64_t *vaddr);
/* The function around vaddr, NULL if no symbol covers it. */
const struct elf_function *elf_function_at(const struct elf_file *f,
					   uint64_t vaddr);
/* The source file (its base name) and line of vaddr; -1 without debug
 * info covering it. */
int elf_source_line(const struct elf_file *f, uint64_t vaddr,
		    const char **file, int *line);

#endif /* CKPT_RESTART_INSPECT_SYMBOLS_H */
