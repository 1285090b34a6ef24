/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The architecture interface of libckpt: everything register-, TLS- or
 * trampoline-specific lives in arch/<arch>/ behind these declarations.
 */
#ifndef CKPT_ARCH_H
#define CKPT_ARCH_H

#include <stdint.h>
#include <ucontext.h>

#if defined(__x86_64__)
/* Callee-saved state at a call boundary, laid out for context.S. */
struct ckpt_context {
	uint64_t rbx, rbp, r12, r13, r14, r15;
	uint64_t sp;
	uint64_t pc;
	uint32_t mxcsr;
	uint16_t fpucw;
	uint16_t pad;
};
#define CKPT_RSEQ_SIG 0x53053053u
#elif defined(__aarch64__)
/* Callee-saved state at a call boundary (AAPCS64), laid out for
 * arch/aarch64/context.S. Everything else a parked thread holds (x0-x30,
 * PSTATE, V0-V31, FPSR/FPCR, SVE) is in its signal frame on its stack. */
struct ckpt_context {
	uint64_t x19_x28[10];
	uint64_t fp, lr;
	uint64_t sp;
	uint64_t pc;
	uint64_t d8_d15[8];
	uint64_t fpcr, fpsr;
};
#define CKPT_RSEQ_SIG 0xd428bc00u	/* glibc's: brk #0x45e0 */
#else
#error "libckpt: unsupported architecture"
#endif

int ckpt_save_context(struct ckpt_context *ctx)
	__attribute__((returns_twice));
void ckpt_resume_context(const struct ckpt_context *ctx, int value)
	__attribute__((noreturn));
long ckpt_clone_thread(unsigned long flags, void *stack, int *ptid,
		       int *ctid, unsigned long tls, void (*fn)(void *),
		       void *arg);
/* rt_sigreturn, for SA_RESTORER: a signal handler's way back that lives
 * in libckpt (signals.c, under an emulator). */
void ckpt_sigreturn_trampoline(void);

uint64_t arch_cpu_features(void);
uint64_t arch_get_tls(void);
uint32_t arch_image_arch(void);
uintptr_t arch_ucontext_pc(const void *ucontext);
uintptr_t arch_ucontext_sp(const void *ucontext);
uint64_t arch_frame_features_in_use(const void *ucontext);
void arch_adapt_frame(void *ucontext, uint64_t current_features);
/* The system call the frame's thread issues again when the handler
 * returns (SA_RESTART), or -1; its arguments, 0-5. */
long arch_frame_pending_syscall(const void *ucontext);
unsigned long arch_frame_syscall_arg(const void *ucontext, int i);
void arch_frame_set_syscall_arg(void *ucontext, int i, unsigned long v);

#endif /* CKPT_ARCH_H */
