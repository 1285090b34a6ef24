/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the freestanding restart loader needs from the architecture:
 * raw syscalls, the TLS base, and the final jump into libckpt.
 */
#ifndef CKPT_RESTART_ARCH_LOADER_H
#define CKPT_RESTART_ARCH_LOADER_H

#include <stdint.h>
#include <asm/prctl.h>
#include "ckpt/image.h"
#include "syscall_arch.h"

#define ARCH_IMAGE_ARCH		CKPT_ARCH_X86_64
#define ARCH_ELF_MACHINE	62	/* EM_X86_64 */

/* The TLS base of the restored main thread (fs on x86_64). After this the
 * loader must not touch thread-local storage; it has none anyway. */
static inline long arch_set_tls(uint64_t tls)
{
	return __syscall2(__NR_arch_prctl, ARCH_SET_FS, (long)tls);
}

/* The CPU's XCR0 (XSAVE components enabled by the kernel), for libckpt's
 * restore of the saved register state; x87|SSE without OSXSAVE. */
static inline uint64_t arch_current_xcr0(void)
{
	uint32_t a = 1, b, c = 0, d, lo, hi;

	__asm__ volatile ("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	if (!(c & (1U << 27)))		/* CPUID.1:ECX.OSXSAVE */
		return 3;
	__asm__ volatile ("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

/*
 * Entry points of a vdso from another kernel (restart/loader/vdso_redirect.c)
 * are overwritten with one of these.
 *
 * movabs $target, %rax; jmp *%rax: any distance, and rax is the return
 * register, free at a function's entry.
 */
#define ARCH_VDSO_JUMP_SIZE	12

static inline void arch_write_vdso_jump(unsigned char *at, uint64_t target)
{
	unsigned i;

	at[0] = 0x48;			/* REX.W */
	at[1] = 0xb8;			/* mov imm64, %rax */
	for (i = 0; i < 8; i++)
		at[2 + i] = (unsigned char)(target >> (8 * i));
	at[10] = 0xff;			/* jmp *%rax */
	at[11] = 0xe0;
}

/* mov $-38, %rax; ret: -ENOSYS as int and as long (time() returns a
 * long), and glibc falls back to the real system call. */
#define ARCH_VDSO_ENOSYS_SIZE	8

static inline void arch_write_vdso_enosys(unsigned char *at)
{
	static const unsigned char code[ARCH_VDSO_ENOSYS_SIZE] = {
		0x48, 0xc7, 0xc0, 0xda, 0xff, 0xff, 0xff,	/* mov */
		0xc3,						/* ret */
	};
	unsigned i;

	for (i = 0; i < sizeof(code); i++)
		at[i] = code[i];
}

/* A thread sharing the loader's memory, files and signal handlers that
 * runs fn(arg) on stack_top and exits when it returns (clone.S). */
long arch_clone_thread(unsigned long flags, void *stack_top, int *tid,
		       void (*fn)(void *), void *arg);

/* The stack protector of code built for glibc (the static libzstd)
 * reads its canary at %fs:0x28: a loader thread with no TLS gets a
 * scratch page (extent_decode.c) until arch_set_tls gives the real one. */
#define ARCH_TLS_SCRATCH_CANARY	0x28

/* Switch to stack_top and call entry(args) with the ABI's alignment;
 * exit_group(70) if it ever returns. In handoff.S. */
void arch_jump_to_restore(uint64_t entry, uint64_t stack_top, void *args)
	__attribute__((noreturn));

#endif /* CKPT_RESTART_ARCH_LOADER_H */
