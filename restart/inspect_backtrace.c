// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_inspect: a backtrace of each saved thread (inspect_backtrace.h).
 *
 * The checkpoint signal's handler parks every application thread, so
 * the kernel's signal frame, with all the registers the thread had, lies
 * on its stack just below the interrupted stack pointer (and the red
 * zone): it is the ucontext whose saved rsp and rip are the thread
 * record's sp and pc. libunwind walks up from those registers with the
 * .eh_frame_hdr tables of the mapped files, read like every other byte
 * through inspect_memory.
 */
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ucontext.h>
#include "inspect_backtrace.h"

/* Exported by libunwind, not declared in its headers (perf declares it
 * the same way): search an .eh_frame_hdr table described by di. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as,
					      unw_word_t ip,
					      unw_dyn_info_t *di,
					      unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

#define RED_ZONE		128
#define SIGFRAME_SEARCH		(64 << 10)	/* an xsave area is < 12 KiB */
#define NREGS			(UNW_X86_64_RIP + 1)
/* .eh_frame_hdr: version 1, a 4-byte eh_frame pointer, a udata4 count,
 * a table of datarel|sdata4 pairs: what every linker writes. */
#define EH_HDR_SIZE		12
#define DW_EH_PE_udata4		0x03
#define DW_EH_PE_datarel_sdata4	0x3b

struct inspect_unwinder {
	struct ckpt_image *img;
	struct elf_file *elves;
	unw_addr_space_t as;
	uint64_t regs[NREGS];		/* libunwind's x86_64 numbering */
	struct inspect_memory mem;
};

/* The ELF file mapped at ip, and what to add to its addresses. */
static struct elf_file *object_at(struct inspect_unwinder *u, uint64_t ip,
				  uint64_t *bias)
{
	const struct ckpt_region *r = inspect_region_at(u->img, ip);
	struct elf_file *f;
	uint64_t vaddr;

	if (!r || !region_is_file(r))
		return NULL;
	f = elf_file_get(&u->elves, image_string(u->img, r->name));
	if (!f || !f->usable ||
	    elf_file_vaddr(f, r->file_offset + (ip - r->start), &vaddr) < 0)
		return NULL;
	*bias = ip - vaddr;
	return f;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip,
			  unw_proc_info_t *pi, int need_unwind_info,
			  void *arg)
{
	struct inspect_unwinder *u = arg;
	unsigned char hdr[EH_HDR_SIZE];
	struct elf_file *f;
	unw_dyn_info_t di;
	uint32_t nfdes;
	uint64_t bias;

	f = object_at(u, ip, &bias);
	if (!f || !f->eh_frame_hdr ||
	    inspect_memory_read(&u->mem, bias + f->eh_frame_hdr, hdr,
				sizeof(hdr)) ||
	    hdr[0] != 1 || (hdr[1] & 0x7) != 3 || hdr[2] != DW_EH_PE_udata4 ||
	    hdr[3] != DW_EH_PE_datarel_sdata4)
		return -UNW_ENOINFO;
	memcpy(&nfdes, hdr + 8, sizeof(nfdes));
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = bias + f->lo;
	di.end_ip = bias + f->hi;
	di.u.rti.segbase = bias + f->eh_frame_hdr;
	di.u.rti.table_data = bias + f->eh_frame_hdr + EH_HDR_SIZE;
	di.u.rti.table_len = (uint64_t)nfdes * 8 / sizeof(unw_word_t);
	return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi,
						  need_unwind_info, arg);
}

/* libunwind's own pool holds what find_proc_info's search allocated. */
static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi,
			    void *arg)
{
	(void)as, (void)pi, (void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr,
				  void *arg)
{
	(void)as, (void)addr, (void)arg;
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val,
		      int write, void *arg)
{
	struct inspect_unwinder *u = arg;

	(void)as;
	if (write || inspect_memory_read(&u->mem, addr, val, sizeof(*val)))
		return -UNW_EINVAL;
	return 0;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val,
		      int write, void *arg)
{
	struct inspect_unwinder *u = arg;

	(void)as;
	if (write || reg < 0 || reg >= NREGS)
		return -UNW_EBADREG;
	*val = u->regs[reg];
	return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg,
			unw_fpreg_t *val, int write, void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as, (void)c, (void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf,
			 size_t len, unw_word_t *off, void *arg)
{
	(void)as, (void)addr, (void)buf, (void)len, (void)off, (void)arg;
	return -UNW_ENOINFO;
}

static unw_accessors_t image_accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

struct inspect_unwinder *inspect_unwinder_new(struct ckpt_image *img)
{
	struct inspect_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->img = img;
	inspect_memory_init(&u->mem, img);
	u->as = unw_create_addr_space(&image_accessors, 0);
	if (!u->as) {
		free(u);
		return NULL;
	}
	return u;
}

void inspect_unwinder_free(struct inspect_unwinder *u)
{
	if (!u)
		return;
	unw_destroy_addr_space(u->as);
	inspect_memory_free(&u->mem);
	elf_files_free(&u->elves);
	free(u);
}

/* The kernel's general registers (REG_*) in libunwind's order. */
static void take_gregs(struct inspect_unwinder *u, const uint64_t *g)
{
	static const int from[NREGS] = {
		[UNW_X86_64_RAX] = REG_RAX, [UNW_X86_64_RDX] = REG_RDX,
		[UNW_X86_64_RCX] = REG_RCX, [UNW_X86_64_RBX] = REG_RBX,
		[UNW_X86_64_RSI] = REG_RSI, [UNW_X86_64_RDI] = REG_RDI,
		[UNW_X86_64_RBP] = REG_RBP, [UNW_X86_64_RSP] = REG_RSP,
		[UNW_X86_64_R8] = REG_R8, [UNW_X86_64_R9] = REG_R9,
		[UNW_X86_64_R10] = REG_R10, [UNW_X86_64_R11] = REG_R11,
		[UNW_X86_64_R12] = REG_R12, [UNW_X86_64_R13] = REG_R13,
		[UNW_X86_64_R14] = REG_R14, [UNW_X86_64_R15] = REG_R15,
		[UNW_X86_64_RIP] = REG_RIP,
	};

	for (int i = 0; i < NREGS; i++)
		u->regs[i] = g[from[i]];
}

/* The ucontext below sp whose saved rsp and rip are the thread's. */
static int find_signal_frame(struct inspect_unwinder *u,
			     const struct ckpt_thread_info *t)
{
	uint64_t top = t->sp - RED_ZONE - NGREG * 8, a, pair[2];
	uint64_t gregs[NGREG];

	for (a = top & ~7ULL; a + SIGFRAME_SEARCH > top && a; a -= 8) {
		if (inspect_memory_read(&u->mem, a + REG_RSP * 8, pair,
					sizeof(pair)))
			return -1;
		if (pair[0] != t->sp || pair[1] != t->pc)
			continue;
		if (inspect_memory_read(&u->mem, a, gregs, sizeof(gregs)))
			return -1;
		take_gregs(u, gregs);
		return 0;
	}
	return -1;
}

static void describe_pc(struct inspect_unwinder *u, struct frame *fr,
			uint64_t pc, int return_address)
{
	uint64_t at = pc - (return_address ? 1 : 0), bias;
	const struct ckpt_region *r = inspect_region_at(u->img, at);
	struct elf_file *f = object_at(u, at, &bias);
	const struct elf_function *fn = f ? elf_function_at(f, at - bias) :
					    NULL;

	memset(fr, 0, sizeof(*fr));
	fr->pc = pc;
	if (r && r->name)
		fr->object = image_string(u->img, r->name);
	if (f)
		fr->object_vaddr = pc - bias;
	if (fn) {
		fr->function = fn->name;
		fr->offset = pc - bias - fn->start;
	}
	if (f && elf_source_line(f, at - bias, &fr->source_file,
				 &fr->source_line))
		fr->source_file = NULL;
}

static void add_frame(struct inspect_unwinder *u, struct backtrace *bt,
		      uint64_t pc, int return_address)
{
	describe_pc(u, &bt->frames[bt->nframes++], pc, return_address);
}

void inspect_describe_code(struct inspect_unwinder *u, uint64_t addr,
			   struct frame *fr)
{
	describe_pc(u, fr, addr, 0);
}

void inspect_backtrace(struct inspect_unwinder *u, uint32_t i,
		       struct backtrace *bt)
{
	const struct ckpt_thread_info *t = &u->img->threads[i];
	unw_cursor_t c;
	unw_word_t ip;
	int r;

	memset(bt, 0, sizeof(*bt));
	memset(u->regs, 0, sizeof(u->regs));
	bt->registers = "signal frame";
	if (find_signal_frame(u, t)) {
		bt->registers = "pc and sp only";
		u->regs[UNW_X86_64_RSP] = t->sp;
		u->regs[UNW_X86_64_RIP] = t->pc;
	}
	r = unw_init_remote(&c, u->as, u);
	if (r < 0) {
		add_frame(u, bt, t->pc, 0);
		snprintf(bt->stop, sizeof(bt->stop), "%s", unw_strerror(r));
		return;
	}
	do {
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || !ip)
			break;
		add_frame(u, bt, ip, bt->nframes > 0);
		r = unw_step(&c);
	} while (r > 0 && bt->nframes < BACKTRACE_MAX_FRAMES);
	if (r < 0)
		snprintf(bt->stop, sizeof(bt->stop), "%s", unw_strerror(r));
}

void frame_text(const struct frame *fr, char *out, size_t len)
{
	const char *base;

	if (fr->function && fr->source_file) {
		snprintf(out, len, "%.*s (%s:%d)",
			 (int)strcspn(fr->function, "@"), fr->function,
			 fr->source_file, fr->source_line);
	} else if (fr->function) { /* no .symtab version: "f@@GLIBC_2.3" */
		snprintf(out, len, "%.*s", (int)strcspn(fr->function, "@"),
			 fr->function);
	} else if (!fr->object) {
		snprintf(out, len, "%#llx", (unsigned long long)fr->pc);
	} else {
		base = strrchr(fr->object, '/');
		snprintf(out, len, "%s+%#llx", base ? base + 1 : fr->object,
			 (unsigned long long)(fr->object_vaddr ?
					      fr->object_vaddr : fr->pc));
	}
}

void backtrace_text(const struct backtrace *bt, char *out, size_t len)
{
	size_t used = 0;
	char one[256];

	out[0] = '\0';
	for (int k = 0; k < bt->nframes && used < len; k++) {
		frame_text(&bt->frames[k], one, sizeof(one));
		used += snprintf(out + used, len - used, "%s%s",
				 k ? " <- " : "", one);
	}
}
