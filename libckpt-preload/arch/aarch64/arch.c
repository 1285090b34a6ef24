/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* aarch64 specifics of the in-process checkpointer. */
#include <asm/sigcontext.h>
#include <string.h>
#include <sys/auxv.h>
#include "../../arch.h"

/* AT_HWCAP bits that decide which register state a thread may hold. */
#define HWCAP_FP_BIT		(1ULL << 0)
#define HWCAP_ASIMD_BIT		(1ULL << 1)
#define HWCAP_SVE_BIT		(1ULL << 22)

uint64_t arch_cpu_features(void)
{
	return getauxval(AT_HWCAP) &
	       (HWCAP_FP_BIT | HWCAP_ASIMD_BIT | HWCAP_SVE_BIT);
}

uint64_t arch_get_tls(void)
{
	uint64_t tp;

	__asm__ volatile ("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
}

uint32_t arch_image_arch(void)
{
	return 183; /* CKPT_ARCH_AARCH64 */
}

uintptr_t arch_ucontext_pc(const void *ucontext)
{
	const ucontext_t *uc = ucontext;

	return uc->uc_mcontext.pc;
}

uintptr_t arch_ucontext_sp(const void *ucontext)
{
	const ucontext_t *uc = ucontext;

	return uc->uc_mcontext.sp;
}

/* The records after the general registers: fpsimd_context, then
 * optional ones (esr, sve, extra ...), each {magic, size}, ended by a
 * zero magic. The first with this magic, or NULL. */
static const struct _aarch64_ctx *frame_record(const void *ucontext,
					       uint32_t magic)
{
	const ucontext_t *uc = ucontext;
	const unsigned char *p = (const unsigned char *)uc->uc_mcontext.__reserved;
	const unsigned char *end = p + sizeof(uc->uc_mcontext.__reserved);
	struct _aarch64_ctx head;

	while (p + sizeof(head) <= end) {
		memcpy(&head, p, sizeof(head));
		if (head.magic == 0 || head.size < sizeof(head))
			return NULL;
		if (head.magic == magic)
			return (const struct _aarch64_ctx *)p;
		p += head.size;
	}
	return NULL;
}

/* FP and Advanced SIMD always (V0-V31, FPSR and FPCR are in every
 * frame); SVE when the frame carries live SVE registers (a record
 * larger than its header). */
uint64_t arch_frame_features_in_use(const void *ucontext)
{
	const struct _aarch64_ctx *sve = frame_record(ucontext, SVE_MAGIC);
	uint64_t in_use = HWCAP_FP_BIT | HWCAP_ASIMD_BIT;

	if (sve && sve->size > sizeof(struct sve_context))
		in_use |= HWCAP_SVE_BIT;
	return in_use;
}

/* The kernel sizes the SVE record by the frame's own vector length and
 * refuses what it cannot restore; the restart checked SVE is here. */
void arch_adapt_frame(void *ucontext, uint64_t current_features)
{
	(void)ucontext;
	(void)current_features;
}

#define AARCH64_SVC_0	0xd4000001u

/* SA_RESTART rewound pc to the `svc #0` and put the first argument back
 * in x0; the number is in x8. The number, or -1. */
long arch_frame_pending_syscall(const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	uint32_t insn;

	memcpy(&insn, (const void *)uc->uc_mcontext.pc, sizeof(insn));
	if (insn != AARCH64_SVC_0)
		return -1;
	return (long)uc->uc_mcontext.regs[8];
}

unsigned long arch_frame_syscall_arg(const void *ucontext, int i)
{
	const ucontext_t *uc = ucontext;

	return uc->uc_mcontext.regs[i];
}

void arch_frame_set_syscall_arg(void *ucontext, int i, unsigned long v)
{
	ucontext_t *uc = ucontext;

	uc->uc_mcontext.regs[i] = v;
}
