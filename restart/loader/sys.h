/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The few system calls the loader makes, as thin typed wrappers over the
 * arch's raw __syscallN (restart/arch/<arch>/syscall_arch.h). Every one
 * returns the kernel's result: >= 0, or -errno. Only calls that exist on
 * every Linux architecture (openat, not open).
 */
#ifndef CKPT_LOADER_SYS_H
#define CKPT_LOADER_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/fcntl.h>
#include <linux/mman.h>
#include <linux/stat.h>
#include "arch_loader.h"

static inline long sys_openat(int dirfd, const char *path, int flags)
{
	return __syscall4(__NR_openat, dirfd, (long)path, flags, 0);
}

static inline long sys_close(int fd)
{
	return __syscall1(__NR_close, fd);
}

static inline long sys_read(int fd, void *buf, size_t len)
{
	return __syscall3(__NR_read, fd, (long)buf, (long)len);
}

static inline long sys_pread(int fd, void *buf, size_t len, uint64_t off)
{
	return __syscall4(__NR_pread64, fd, (long)buf, (long)len, (long)off);
}

static inline long sys_getpid(void)
{
	return __syscall0(__NR_getpid);
}

/* iov: arrays of n {base, len} pairs (struct iovec). */
static inline long sys_process_vm_writev(long pid, const void *local_iov,
					 unsigned long nlocal,
					 const void *remote_iov,
					 unsigned long nremote)
{
	return __syscall6(__NR_process_vm_writev, pid, (long)local_iov,
			  (long)nlocal, (long)remote_iov, (long)nremote, 0);
}

static inline long sys_write(int fd, const void *buf, size_t len)
{
	return __syscall3(__NR_write, fd, (long)buf, (long)len);
}

static inline long sys_mmap(uint64_t addr, uint64_t len, int prot, int flags,
			    int fd, uint64_t off)
{
	return __syscall6(__NR_mmap, (long)addr, (long)len, prot, flags, fd,
			  (long)off);
}

/* The raw brk system call: the new break, or the old one on failure. */
static inline long sys_brk(uint64_t addr)
{
	return __syscall1(__NR_brk, (long)addr);
}

static inline long sys_munmap(uint64_t addr, uint64_t len)
{
	return __syscall2(__NR_munmap, (long)addr, (long)len);
}

static inline long sys_mremap(uint64_t old, uint64_t len, uint64_t new_addr)
{
	return __syscall5(__NR_mremap, (long)old, (long)len, (long)len,
			  MREMAP_MAYMOVE | MREMAP_FIXED, (long)new_addr);
}

static inline long sys_mprotect(uint64_t addr, uint64_t len, int prot)
{
	return __syscall3(__NR_mprotect, (long)addr, (long)len, prot);
}

static inline long sys_madvise(uint64_t addr, uint64_t len, int advice)
{
	return __syscall3(__NR_madvise, (long)addr, (long)len, advice);
}

static inline long sys_statx_fd(int fd, struct statx *stx)
{
	return __syscall5(__NR_statx, fd, (long)"", AT_EMPTY_PATH,
			  STATX_BASIC_STATS, (long)stx);
}

static inline long sys_block_all_signals(void)
{
	uint64_t all = ~0ULL;

	/* how = SIG_SETMASK (2), the kernel's sigset is 8 bytes */
	return __syscall4(__NR_rt_sigprocmask, 2, (long)&all, 0, 8);
}

static inline long sys_close_range(unsigned first, unsigned last)
{
	return __syscall3(__NR_close_range, first, last, 0);
}

static inline long sys_prctl(int option, unsigned long arg)
{
	return __syscall5(__NR_prctl, option, (long)arg, 0, 0, 0);
}

/* ts: a struct of two longs (seconds, nanoseconds), as the kernel's
 * struct timespec on 64-bit architectures. */
static inline long sys_clock_gettime_monotonic(void *ts)
{
	return __syscall2(__NR_clock_gettime, 1 /* CLOCK_MONOTONIC */,
			  (long)ts);
}

static inline __attribute__((noreturn)) void sys_exit_group(int code)
{
	for (;;)
		__syscall1(__NR_exit_group, code);
}

#endif /* CKPT_LOADER_SYS_H */
