/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * long arch_clone_thread(unsigned long flags, void *stack_top, int *tid,
 *                        void (*fn)(void *), void *arg)
 * A thread of the loader (restart/loader/extent_decode.c) that runs
 * fn(arg) on stack_top and exits when fn returns; the kernel stores its
 * tid at *tid and clears it at exit (CLONE_PARENT_SETTID |
 * CLONE_CHILD_CLEARTID in flags). The new tid or -errno in the parent.
 */
	.text
	.globl	arch_clone_thread
	.hidden	arch_clone_thread
	.type	arch_clone_thread, @function
arch_clone_thread:
	andq	$-16, %rsi
	subq	$16, %rsi
	movq	%rcx, 0(%rsi)		/* fn */
	movq	%r8, 8(%rsi)		/* arg */
	movq	%rdx, %r10		/* child_tid */
					/* rdx: parent_tid, the same word */
	xorl	%r8d, %r8d		/* tls: none */
	movl	$56, %eax		/* __NR_clone */
	syscall
	testq	%rax, %rax
	jnz	1f
	xorl	%ebp, %ebp
	popq	%rax
	popq	%rdi
	callq	*%rax
	movl	$60, %eax		/* __NR_exit: this thread only */
	xorl	%edi, %edi
	syscall
	hlt
1:	ret
	.size	arch_clone_thread, . - arch_clone_thread
	.section .note.GNU-stack,"",@progbits
