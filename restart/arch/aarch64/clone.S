/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * long arch_clone_thread(unsigned long flags, void *stack_top, int *tid,
 *                        void (*fn)(void *), void *arg)
 * A thread of the loader (restart/loader/extent_decode.c) that runs
 * fn(arg) on stack_top and exits when fn returns; the kernel stores its
 * tid at *tid and clears it at exit (CLONE_PARENT_SETTID |
 * CLONE_CHILD_CLEARTID in flags). The new tid or -errno in the parent.
 * arm64's clone takes (flags, stack, parent_tid, tls, child_tid).
 */
	.text
	.globl	arch_clone_thread
	.hidden	arch_clone_thread
	.type	arch_clone_thread, %function
arch_clone_thread:
	and	x1, x1, #-16
	sub	x1, x1, #16
	stp	x3, x4, [x1]		/* fn, arg */
	mov	x4, x2			/* child_tid: the same word */
	mov	x3, xzr			/* tls: none */
	mov	x8, #220		/* __NR_clone */
	svc	#0
	cbnz	x0, 1f
	ldp	x9, x0, [sp], #16
	mov	x29, xzr
	mov	x30, xzr
	blr	x9
	mov	x0, xzr
	mov	x8, #93			/* __NR_exit: this thread only */
	svc	#0
	brk	#0
1:	ret
	.size	arch_clone_thread, . - arch_clone_thread

/* The stack-protector canary of the static libzstd's code (glibc on
 * aarch64 keeps it in this global, not in TLS). */
	.data
	.balign	8
	.globl	__stack_chk_guard
	.hidden	__stack_chk_guard
__stack_chk_guard:
	.quad	0x2f8a6c15e3d94b07
	.section .note.GNU-stack, "", %progbits
