/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * void arch_jump_to_restore(uint64_t entry, uint64_t stack_top, void *args)
 *
 * Leave the loader's stack for the one libckpt chose (16-byte aligned, as
 * AAPCS64 wants sp always) and call entry(args). libckpt never returns;
 * if it does, exit_group(70).
 */
	.text
	.globl	arch_jump_to_restore
	.hidden	arch_jump_to_restore
	.type	arch_jump_to_restore, %function
arch_jump_to_restore:
	and	x1, x1, #-16
	mov	sp, x1
	mov	x9, x0
	mov	x0, x2
	mov	x29, xzr
	mov	x30, xzr
	blr	x9
	mov	x0, #70
	mov	x8, #94			/* exit_group */
	svc	#0
	brk	#0
	.size	arch_jump_to_restore, . - arch_jump_to_restore

	.section .note.GNU-stack, "", %progbits
