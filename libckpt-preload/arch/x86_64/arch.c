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

/* A thread stopped by the signal with the kernel about to (re)issue a
 * system call on return: SA_RESTART rewound rip to the `syscall`
 * instruction and put the number back in rax (or the signal came just
 * before the instruction). The number, or -1. */
long arch_frame_pending_syscall(const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	const unsigned char *ip =
		(const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];

	if (ip[0] != 0x0f || ip[1] != 0x05)
		return -1;
	return uc->uc_mcontext.gregs[REG_RAX];
}

static const int syscall_arg_regs[6] = {
	REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9,
};

unsigned long arch_frame_syscall_arg(const void *ucontext, int i)
{
	const ucontext_t *uc = ucontext;

	return uc->uc_mcontext.gregs[syscall_arg_regs[i]];
}

void arch_frame_set_syscall_arg(void *ucontext, int i, unsigned long v)
{
	ucontext_t *uc = ucontext;

	uc->uc_mcontext.gregs[syscall_arg_regs[i]] = v;
}

/* The xsave area of a signal frame: the software-reserved bytes the
 * kernel put at offset 464 of the legacy area, and the XSAVE header. */
#define FX_SW_OFFSET 464
#define XSTATE_BV_OFFSET 512
#define FP_XSTATE_MAGIC1 0x46505853u
#define FP_XSTATE_MAGIC2 0x46505845u

struct fx_sw_bytes {
	uint32_t magic1;
	uint32_t extended_size;
	uint64_t xfeatures;
	uint32_t xstate_size;
	uint32_t padding[7];
};

static char *frame_fpstate(const void *ucontext)
{
	const ucontext_t *uc = ucontext;

	return (char *)uc->uc_mcontext.fpregs;
}

/* Which state components the interrupted code had in use (XSTATE_BV),
 * always including x87 and SSE. */
uint64_t arch_frame_features_in_use(const void *ucontext)
{
	char *fp = frame_fpstate(ucontext);
	struct fx_sw_bytes sw;
	uint64_t bv;

	if (!fp)
		return 3;
	__builtin_memcpy(&sw, fp + FX_SW_OFFSET, sizeof(sw));
	if (sw.magic1 != FP_XSTATE_MAGIC1)
		return 3;
	__builtin_memcpy(&bv, fp + XSTATE_BV_OFFSET, sizeof(bv));
	return bv | 3;
}

static uint32_t xsave_size_for_xcr0(void)
{
	uint32_t a, b, c, d;

	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
			 : "a"(0xd), "c"(0));
	return b;
}

/*
 * A frame saved on a CPU with a larger xsave area than this one: the
 * kernel would refuse its size and fall back to restoring x87/SSE only,
 * losing live AVX state. The standard-format offsets of the components
 * both CPUs have are the same, so shrinking the advertised size (and
 * dropping the components this CPU lacks, which the restart checked are
 * not in use) gives the kernel a frame it restores completely.
 */
void arch_adapt_frame(void *ucontext, uint64_t current_features)
{
	char *fp = frame_fpstate(ucontext);
	uint32_t size = xsave_size_for_xcr0(), magic2 = FP_XSTATE_MAGIC2;
	struct fx_sw_bytes sw;
	uint64_t bv;

	if (!fp || !current_features)
		return;
	__builtin_memcpy(&sw, fp + FX_SW_OFFSET, sizeof(sw));
	if (sw.magic1 != FP_XSTATE_MAGIC1 || sw.xstate_size <= size)
		return;
	sw.xstate_size = size;
	sw.extended_size = size + sizeof(magic2);
	sw.xfeatures &= current_features;
	__builtin_memcpy(fp + FX_SW_OFFSET, &sw, sizeof(sw));
	__builtin_memcpy(&bv, fp + XSTATE_BV_OFFSET, sizeof(bv));
	bv &= current_features;
	__builtin_memcpy(fp + XSTATE_BV_OFFSET, &bv, sizeof(bv));
	__builtin_memcpy(fp + size, &magic2, sizeof(magic2));
}
