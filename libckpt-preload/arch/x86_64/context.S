/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * x86_64 context switching for checkpoint/restart.
 * struct ckpt_context (libckpt-preload/arch.h): rbx rbp r12 r13 r14 r15
 * rsp rip mxcsr fpucw, at offsets 0..68.
 */
	.text

/* int ckpt_save_context(struct ckpt_context *ctx): 0 now, later the value
 * given to ckpt_resume_context (like setjmp, without pointer mangling so
 * a restarted process can resume it). */
	.globl ckpt_save_context
	.hidden ckpt_save_context
	.type ckpt_save_context, @function
ckpt_save_context:
	movq %rbx, 0(%rdi)
	movq %rbp, 8(%rdi)
	movq %r12, 16(%rdi)
	movq %r13, 24(%rdi)
	movq %r14, 32(%rdi)
	movq %r15, 40(%rdi)
	leaq 8(%rsp), %rdx
	movq %rdx, 48(%rdi)
	movq (%rsp), %rdx
	movq %rdx, 56(%rdi)
	stmxcsr 64(%rdi)
	fnstcw 68(%rdi)
	xorl %eax, %eax
	ret
	.size ckpt_save_context, .-ckpt_save_context

/* void ckpt_resume_context(const struct ckpt_context *ctx, int value) */
	.globl ckpt_resume_context
	.hidden ckpt_resume_context
	.type ckpt_resume_context, @function
ckpt_resume_context:
	movq 0(%rdi), %rbx
	movq 8(%rdi), %rbp
	movq 16(%rdi), %r12
	movq 24(%rdi), %r13
	movq 32(%rdi), %r14
	movq 40(%rdi), %r15
	ldmxcsr 64(%rdi)
	fldcw 68(%rdi)
	movq 48(%rdi), %rsp
	movl %esi, %eax
	jmpq *56(%rdi)
	.size ckpt_resume_context, .-ckpt_resume_context

/* long ckpt_clone_thread(unsigned long flags, void *stack, int *ptid,
 *                        int *ctid, unsigned long tls,
 *                        void (*fn)(void *), void *arg)
 * Raw clone of a thread that runs fn(arg) on `stack` and exits if fn
 * returns. Returns the new tid or -errno in the parent. */
	.globl ckpt_clone_thread
	.hidden ckpt_clone_thread
	.type ckpt_clone_thread, @function
ckpt_clone_thread:
	movq 8(%rsp), %rax
	andq $-16, %rsi
	/* fn and arg, popped by the child, and 16 bytes above its first
	 * frame: ckpt_syscall reads a seventh argument from its caller's
	 * frame even for fewer, and fn may reach it by a tail jump with
	 * nothing of its own on the stack (a helper's SYS_exit faulted
	 * reading just past the top of its stack mapping) */
	subq $32, %rsi
	movq %rax, 8(%rsi)
	movq %r9, 0(%rsi)
	movq %rcx, %r10
	movl $56, %eax		/* __NR_clone */
	syscall
	testq %rax, %rax
	jnz 1f
	xorl %ebp, %ebp
	popq %rax
	popq %rdi
	callq *%rax
	movl $60, %eax		/* __NR_exit */
	xorl %edi, %edi
	syscall
	hlt
1:	ret
	.size ckpt_clone_thread, .-ckpt_clone_thread


/* The syscall whose number and six arguments came as a C call's
 * (nr, a1, ..., a6): the kernel's result in %rax. */
.macro SYSCALL_OF_CALL_ARGS
	movq %rdi, %rax
	movq %rsi, %rdi
	movq %rdx, %rsi
	movq %rcx, %rdx
	movq %r8, %r10
	movq %r9, %r8
	movq 8(%rsp), %r9
	syscall
.endm

/* long ckpt_syscall(long nr, ...): syscall(2) without going through the
 * interposed symbol (libckpt wraps syscall for virtual ids). */
	.text
	.globl ckpt_syscall
	.hidden ckpt_syscall
	.type ckpt_syscall, @function
ckpt_syscall:
	SYSCALL_OF_CALL_ARGS
	cmpq $-4095, %rax
	jae 1f
	ret
1:	negq %rax
	movq %rax, %rdi
	jmp ckpt_syscall_error
	.size ckpt_syscall, .-ckpt_syscall

/* long ckpt_syscall_noerrno(long nr, long a1, ..., long a6): the kernel's
 * result as it is (-errno on failure); errno is not touched. */
	.globl ckpt_syscall_noerrno
	.hidden ckpt_syscall_noerrno
	.type ckpt_syscall_noerrno, @function
ckpt_syscall_noerrno:
	SYSCALL_OF_CALL_ARGS
	ret
	.size ckpt_syscall_noerrno, .-ckpt_syscall_noerrno

/* void ckpt_sigreturn_trampoline(void): where a signal handler returns
 * with SA_RESTORER; the kernel (or emulator) restores the frame. */
	.globl ckpt_sigreturn_trampoline
	.hidden ckpt_sigreturn_trampoline
	.type ckpt_sigreturn_trampoline, @function
ckpt_sigreturn_trampoline:
	movq $15, %rax		/* __NR_rt_sigreturn */
	syscall
	hlt
	.size ckpt_sigreturn_trampoline, .-ckpt_sigreturn_trampoline
	.section .note.GNU-stack,"",@progbits
