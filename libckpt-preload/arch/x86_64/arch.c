/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* x86_64 specifics of the in-process checkpointer. */
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../../arch.h"

uint64_t arch_cpu_features(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

uint64_t arch_get_tls(void)
{
	unsigned long fs = 0;

	syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
	return fs;
}

uint32_t arch_image_arch(void)
{
	return 62; /* CKPT_ARCH_X86_64 */
}

uintptr_t arch_ucontext_pc(const void *ucontext)
{
	const ucontext_t *uc = ucontext;

	return uc->uc_mcontext.gregs[REG_RIP];
}

uintptr_t arch_ucontext_sp(const void *ucontext)
{
	const ucontext_t *uc = ucontext;

	return uc->uc_mcontext.gregs[REG_RSP];
}
