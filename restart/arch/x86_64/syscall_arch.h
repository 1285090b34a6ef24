/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Raw system calls for the freestanding restart loader on x86_64, musl
 * style: each returns the kernel's value, -errno on failure.
 * Syscall numbers come from the kernel's uapi header.
 */
#ifndef CKPT_RESTART_SYSCALL_ARCH_H
#define CKPT_RESTART_SYSCALL_ARCH_H

#include <asm/unistd.h>

static inline long __syscall0(long n)
{
	unsigned long ret;

	__asm__ __volatile__ ("syscall" : "=a"(ret) : "a"(n)
			      : "rcx", "r11", "memory");
	return ret;
}

static inline long __syscall1(long n, long a1)
{
	unsigned long ret;

	__asm__ __volatile__ ("syscall" : "=a"(ret) : "a"(n), "D"(a1)
			      : "rcx", "r11", "memory");
	return ret;
}

static inline long __syscall2(long n, long a1, long a2)
{
	unsigned long ret;

	__asm__ __volatile__ ("syscall" : "=a"(ret) : "a"(n), "D"(a1), "S"(a2)
			      : "rcx", "r11", "memory");
	return ret;
}

static inline long __syscall3(long n, long a1, long a2, long a3)
{
	unsigned long ret;

	__asm__ __volatile__ ("syscall" : "=a"(ret) : "a"(n), "D"(a1), "S"(a2),
			      "d"(a3) : "rcx", "r11", "memory");
	return ret;
}

static inline long __syscall4(long n, long a1, long a2, long a3, long a4)
{
	unsigned long ret;
	register long r10 __asm__("r10") = a4;

	__asm__ __volatile__ ("syscall" : "=a"(ret) : "a"(n), "D"(a1), "S"(a2),
			      "d"(a3), "r"(r10) : "rcx", "r11", "memory");
	return ret;
}

static inline long __syscall5(long n, long a1, long a2, long a3, long a4,
			      long a5)
{
	unsigned long ret;
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;

	__asm__ __volatile__ ("syscall" : "=a"(ret) : "a"(n), "D"(a1), "S"(a2),
			      "d"(a3), "r"(r10), "r"(r8) : "rcx", "r11",
			      "memory");
	return ret;
}

static inline long __syscall6(long n, long a1, long a2, long a3, long a4,
			      long a5, long a6)
{
	unsigned long ret;
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;

	__asm__ __volatile__ ("syscall" : "=a"(ret) : "a"(n), "D"(a1), "S"(a2),
			      "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			      : "rcx", "r11", "memory");
	return ret;
}

#endif /* CKPT_RESTART_SYSCALL_ARCH_H */
