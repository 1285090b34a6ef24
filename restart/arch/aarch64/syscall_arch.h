/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Raw system calls for the freestanding restart loader on aarch64, musl
 * style: number in x8, arguments in x0-x5, `svc #0`, the kernel's value
 * (-errno on failure) back in x0. Numbers from the kernel's uapi header
 * (the generic table: no open, fork, pipe or dup2; their *at/3 forms).
 */
#ifndef CKPT_RESTART_SYSCALL_ARCH_H
#define CKPT_RESTART_SYSCALL_ARCH_H

#include <asm/unistd.h>

#define AARCH64_SYSCALL(n, ...)						\
	register long x8 __asm__("x8") = (n);				\
	__asm__ __volatile__ ("svc #0" : "+r"(x0) : "r"(x8), ##__VA_ARGS__ \
			      : "memory");				\
	return x0

static inline long __syscall0(long n)
{
	register long x0 __asm__("x0");

	AARCH64_SYSCALL(n);
}

static inline long __syscall1(long n, long a1)
{
	register long x0 __asm__("x0") = a1;

	AARCH64_SYSCALL(n);
}

static inline long __syscall2(long n, long a1, long a2)
{
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;

	AARCH64_SYSCALL(n, "r"(x1));
}

static inline long __syscall3(long n, long a1, long a2, long a3)
{
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;

	AARCH64_SYSCALL(n, "r"(x1), "r"(x2));
}

static inline long __syscall4(long n, long a1, long a2, long a3, long a4)
{
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;

	AARCH64_SYSCALL(n, "r"(x1), "r"(x2), "r"(x3));
}

static inline long __syscall5(long n, long a1, long a2, long a3, long a4,
			      long a5)
{
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;

	AARCH64_SYSCALL(n, "r"(x1), "r"(x2), "r"(x3), "r"(x4));
}

static inline long __syscall6(long n, long a1, long a2, long a3, long a4,
			      long a5, long a6)
{
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;
	register long x5 __asm__("x5") = a6;

	AARCH64_SYSCALL(n, "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5));
}

#endif /* CKPT_RESTART_SYSCALL_ARCH_H */
