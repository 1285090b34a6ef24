/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Entry of the restart loader. The kernel's stack may sit where the image
 * wants memory, so move to a private stack in our own bss at once and give
 * loader_main() the kernel stack pointer (argc, argv, envp, auxv).
 */
#define LOADER_STACK_SIZE (256 * 1024)

	.text
	.globl	_start
	.type	_start, @function
_start:
	xor	%ebp, %ebp
	mov	%rsp, %rdi
	lea	loader_stack_top(%rip), %rsp
	and	$-16, %rsp
	call	loader_main
	/* loader_main never returns; be safe anyway. */
	mov	$70, %edi
	mov	$231, %eax		/* exit_group */
	syscall
	hlt
	.size	_start, . - _start

	.bss
	.balign	16
loader_stack:
	.skip	LOADER_STACK_SIZE
loader_stack_top:

	.section .note.GNU-stack, "", @progbits
