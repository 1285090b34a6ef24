/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * void arch_jump_to_restore(uint64_t entry, uint64_t stack_top, void *args)
 *
 * Leave the loader's stack for the one libckpt chose (16-byte aligned, so
 * the callee sees rsp % 16 == 8 after the call, as the ABI wants) and call
 * entry(args). libckpt never returns; if it does, exit_group(70).
 */
	.text
	.globl	arch_jump_to_restore
	.hidden	arch_jump_to_restore
	.type	arch_jump_to_restore, @function
arch_jump_to_restore:
	mov	%rdi, %rax
	mov	%rsi, %rsp
	and	$-16, %rsp
	mov	%rdx, %rdi
	xor	%ebp, %ebp
	call	*%rax
	mov	$70, %edi
	mov	$231, %eax		/* exit_group */
	syscall
	hlt
	.size	arch_jump_to_restore, . - arch_jump_to_restore

	.section .note.GNU-stack, "", @progbits
