/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Entry of the restart loader. The kernel's stack may sit where the image
 * wants memory, so move to a private stack in our own bss at once and give
 * loader_main() the kernel stack pointer (argc, argv, envp, auxv). First
 * of all, relocate the blob's GOT slots (the only relocations the build
 * lets through: R_AARCH64_RELATIVE, see arch.mk).
 */
#define LOADER_STACK_SIZE (256 * 1024)

	.text
	.globl	_start
	.type	_start, %function
_start:
	mov	x29, xzr
	mov	x30, xzr
	bl	apply_relative_relocs
	mov	x0, sp
	adrp	x1, loader_stack_top
	add	x1, x1, :lo12:loader_stack_top
	and	x1, x1, #-16
	mov	sp, x1
	bl	loader_main
	/* loader_main never returns; be safe anyway. */
	mov	x0, #70
	mov	x8, #94			/* exit_group */
	svc	#0
	brk	#0
	.size	_start, . - _start

/* For each Elf64_Rela {offset, info, addend} in [__rela_start,
 * __rela_end): *(base + offset) = base + addend. Any other type is a
 * build error (restart/build.mk); exit_group(71) if one got through. */
	.type	apply_relative_relocs, %function
apply_relative_relocs:
	adrp	x9, __blob_start
	add	x9, x9, :lo12:__blob_start
	adrp	x10, __rela_start
	add	x10, x10, :lo12:__rela_start
	adrp	x11, __rela_end
	add	x11, x11, :lo12:__rela_end
1:	cmp	x10, x11
	b.hs	3f
	ldp	x12, x13, [x10]
	ldr	x14, [x10, #16]
	add	x10, x10, #24
	cmp	w13, #1027		/* R_AARCH64_RELATIVE */
	b.ne	2f
	add	x14, x14, x9
	str	x14, [x9, x12]
	b	1b
2:	mov	x0, #71
	mov	x8, #94			/* exit_group */
	svc	#0
	brk	#0
3:	ret
	.size	apply_relative_relocs, . - apply_relative_relocs

	.bss
	.balign	16
loader_stack:
	.skip	LOADER_STACK_SIZE
loader_stack_top:

	.section .note.GNU-stack, "", %progbits
