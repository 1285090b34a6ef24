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

/* The TLS base of the restored main thread (fs on x86_64). After this the
 * loader must not touch thread-local storage; it has none anyway. */
static inline long arch_set_tls(uint64_t tls)
{
	return __syscall2(__NR_arch_prctl, ARCH_SET_FS, (long)tls);
}

/* Switch to stack_top and call entry(args) with the ABI's alignment;
 * exit_group(70) if it ever returns. In handoff.S. */
void arch_jump_to_restore(uint64_t entry, uint64_t stack_top, void *args)
	__attribute__((noreturn));

#endif /* CKPT_RESTART_ARCH_LOADER_H */
