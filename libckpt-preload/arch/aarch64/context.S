/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * aarch64 context switching for checkpoint/restart.
 * struct ckpt_context (libckpt-preload/arch.h): x19-x28, fp, lr, sp, pc,
 * d8-d15, fpcr, fpsr at offsets 0..184.
 */
	.text

/* int ckpt_save_context(struct ckpt_context *ctx): 0 now, later the value
 * given to ckpt_resume_context (like setjmp, without pointer mangling so
 * a restarted process can resume it). */
	.globl ckpt_save_context
	.hidden ckpt_save_context
	.type ckpt_save_context, %function
ckpt_save_context:
	stp	x19, x20, [x0, #0]
	stp	x21, x22, [x0, #16]
	stp	x23, x24, [x0, #32]
	stp	x25, x26, [x0, #48]
	stp	x27, x28, [x0, #64]
	stp	x29, x30, [x0, #80]
	mov	x9, sp
	stp	x9, x30, [x0, #96]	/* sp, pc: the return address */
	stp	d8, d9, [x0, #112]
	stp	d10, d11, [x0, #128]
	stp	d12, d13, [x0, #144]
	stp	d14, d15, [x0, #160]
	mrs	x9, fpcr
	mrs	x10, fpsr
	stp	x9, x10, [x0, #176]
	mov	w0, #0
	ret
	.size ckpt_save_context, .-ckpt_save_context

/* void ckpt_resume_context(const struct ckpt_context *ctx, int value) */
	.globl ckpt_resume_context
	.hidden ckpt_resume_context
	.type ckpt_resume_context, %function
ckpt_resume_context:
	ldp	x19, x20, [x0, #0]
	ldp	x21, x22, [x0, #16]
	ldp	x23, x24, [x0, #32]
	ldp	x25, x26, [x0, #48]
	ldp	x27, x28, [x0, #64]
	ldp	x29, x30, [x0, #80]
	ldp	d8, d9, [x0, #112]
	ldp	d10, d11, [x0, #128]
	ldp	d12, d13, [x0, #144]
	ldp	d14, d15, [x0, #160]
	ldp	x9, x10, [x0, #176]
	msr	fpcr, x9
	msr	fpsr, x10
	ldp	x9, x10, [x0, #96]	/* sp, pc */
	mov	sp, x9
	mov	w0, w1
	br	x10
	.size ckpt_resume_context, .-ckpt_resume_context

/* long ckpt_clone_thread(unsigned long flags, void *stack, int *ptid,
 *                        int *ctid, unsigned long tls,
 *                        void (*fn)(void *), void *arg)
 * Raw clone of a thread that runs fn(arg) on `stack` and exits if fn
 * returns. Returns the new tid or -errno in the parent. arm64's clone
 * takes (flags, stack, parent_tid, tls, child_tid). */
	.globl ckpt_clone_thread
	.hidden ckpt_clone_thread
	.type ckpt_clone_thread, %function
ckpt_clone_thread:
	and	x1, x1, #-16
	sub	x1, x1, #16
	stp	x5, x6, [x1]		/* fn, arg */
	mov	x9, x3
	mov	x3, x4			/* tls */
	mov	x4, x9			/* child_tid */
	mov	x8, #220		/* __NR_clone */
	svc	#0
	cbnz	x0, 1f
	ldp	x9, x0, [sp], #16
	mov	x29, xzr
	mov	x30, xzr
	blr	x9
	mov	x0, xzr
	mov	x8, #93			/* __NR_exit */
	svc	#0
	brk	#0
1:	ret
	.size ckpt_clone_thread, .-ckpt_clone_thread

/* void ckpt_sigreturn_trampoline(void): where a signal handler returns
 * with SA_RESTORER; the kernel (or emulator) restores the frame. */
	.globl ckpt_sigreturn_trampoline
	.hidden ckpt_sigreturn_trampoline
	.type ckpt_sigreturn_trampoline, %function
ckpt_sigreturn_trampoline:
	mov	x8, #139		/* __NR_rt_sigreturn */
	svc	#0
	brk	#0
	.size ckpt_sigreturn_trampoline, .-ckpt_sigreturn_trampoline

/* long ckpt_syscall(long nr, ...): syscall(2) without going through the
 * interposed symbol (libckpt wraps syscall for virtual ids). */
	.globl ckpt_syscall
	.hidden ckpt_syscall
	.type ckpt_syscall, %function
ckpt_syscall:
	mov	x8, x0
	mov	x0, x1
	mov	x1, x2
	mov	x2, x3
	mov	x3, x4
	mov	x4, x5
	mov	x5, x6
	svc	#0
	cmn	x0, #4095
	b.hs	1f
	ret
1:	neg	x0, x0
	b	ckpt_syscall_error
	.size ckpt_syscall, .-ckpt_syscall

/* long ckpt_syscall_noerrno(long nr, long a1, ..., long a6): the kernel's
 * result as it is (-errno on failure); errno is not touched. */
	.globl ckpt_syscall_noerrno
	.hidden ckpt_syscall_noerrno
	.type ckpt_syscall_noerrno, %function
ckpt_syscall_noerrno:
	mov	x8, x0
	mov	x0, x1
	mov	x1, x2
	mov	x2, x3
	mov	x3, x4
	mov	x4, x5
	mov	x5, x6
	svc	#0
	ret
	.size ckpt_syscall_noerrno, .-ckpt_syscall_noerrno
	.section .note.GNU-stack,"",%progbits
