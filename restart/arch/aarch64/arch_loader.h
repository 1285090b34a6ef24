/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the freestanding restart loader needs from the architecture:
 * raw syscalls, the TLS base, and the final jump into libckpt. aarch64.
 */
#ifndef CKPT_RESTART_ARCH_LOADER_H
#define CKPT_RESTART_ARCH_LOADER_H

#include <stdint.h>
#include "ckpt/image.h"
#include "syscall_arch.h"

#define ARCH_IMAGE_ARCH		CKPT_ARCH_AARCH64
#define ARCH_ELF_MACHINE	183	/* EM_AARCH64 */

/* The TLS base of the restored main thread: TPIDR_EL0, writable from
 * EL0 without a system call. */
static inline long arch_set_tls(uint64_t tls)
{
	__asm__ volatile ("msr tpidr_el0, %0" : : "r"(tls) : "memory");
	return 0;
}

/* libckpt adapts x86 signal frames to a smaller XSAVE area; arm64's
 * kernel sizes the SVE record itself, so there is nothing to pass. */
static inline uint64_t arch_current_xcr0(void)
{
	return 0;
}

/* Code written at run time (the vdso patches below) reaches the
 * instruction fetch only after the data cache is cleaned to the point of
 * unification and the instruction cache invalidated, line by line (the
 * 64-byte minimum line of today's cores is assumed; CTR_EL0 gives it). */
static inline void arch_sync_icache(unsigned char *start, uint64_t len)
{
	uint64_t line = 64, p = (uint64_t)start & ~(line - 1);
	uint64_t end = (uint64_t)start + len;

	for (uint64_t a = p; a < end; a += line)
		__asm__ volatile ("dc cvau, %0" : : "r"(a) : "memory");
	__asm__ volatile ("dsb ish" : : : "memory");
	for (uint64_t a = p; a < end; a += line)
		__asm__ volatile ("ic ivau, %0" : : "r"(a) : "memory");
	__asm__ volatile ("dsb ish\n\tisb" : : : "memory");
}

static inline void arch_put32(unsigned char *at, uint32_t insn)
{
	for (unsigned i = 0; i < 4; i++)
		at[i] = (unsigned char)(insn >> (8 * i));
}

/*
 * Entry points of a vdso from another kernel (restart/loader/vdso_redirect.c)
 * are overwritten with one of these.
 *
 * ldr x16, 8; br x16; .quad target: any distance, and x16 (IP0) is the
 * intra-procedure-call scratch register, free at a function's entry.
 */
#define ARCH_VDSO_JUMP_SIZE	16

static inline void arch_write_vdso_jump(unsigned char *at, uint64_t target)
{
	arch_put32(at, 0x58000050);		/* ldr x16, .+8 */
	arch_put32(at + 4, 0xd61f0200);		/* br x16 */
	for (unsigned i = 0; i < 8; i++)
		at[8 + i] = (unsigned char)(target >> (8 * i));
	arch_sync_icache(at, ARCH_VDSO_JUMP_SIZE);
}

/* mov x0, #-38; ret: -ENOSYS, and glibc falls back to the real system
 * call. */
#define ARCH_VDSO_ENOSYS_SIZE	8

static inline void arch_write_vdso_enosys(unsigned char *at)
{
	arch_put32(at, 0x928004a0);		/* movn x0, #37 */
	arch_put32(at + 4, 0xd65f03c0);		/* ret */
	arch_sync_icache(at, ARCH_VDSO_ENOSYS_SIZE);
}

/* A thread sharing the loader's memory, files and signal handlers that
 * runs fn(arg) on stack_top and exits when it returns (clone.S). */
long arch_clone_thread(unsigned long flags, void *stack_top, int *tid,
		       void (*fn)(void *), void *arg);

/* glibc's aarch64 stack protector reads a global (__stack_chk_guard, in
 * clone.S), not TLS: the scratch TLS page only needs to exist. */
#define ARCH_TLS_SCRATCH_CANARY	0x28

/* Switch to stack_top and call entry(args) with the ABI's alignment;
 * exit_group(70) if it ever returns. In handoff.S. */
void arch_jump_to_restore(uint64_t entry, uint64_t stack_top, void *args)
	__attribute__((noreturn));

#endif /* CKPT_RESTART_ARCH_LOADER_H */
