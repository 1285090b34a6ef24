// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * x86_64: an image's cpu_features is the XCR0 of the checkpointing CPU, the
 * set of XSAVE state components its threads may hold. Restarting on a CPU
 * (or kernel) without one of them would lose registers or fault in XRSTOR.
 */
#include <cpuid.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "../../image_check.h"

/* XCR0 bits, grouped as the SDM names the state components. */
static const struct {
	uint64_t mask;
	const char *name;
} xsave_components[] = {
	{ 1ULL << 0, "x87 state" },
	{ 1ULL << 1, "SSE state" },
	{ 1ULL << 2, "AVX state" },
	{ 3ULL << 3, "MPX state" },
	{ 7ULL << 5, "AVX-512 state" },
	{ 1ULL << 9, "PKRU state" },
	{ 3ULL << 17, "AMX state" },
	{ 1ULL << 19, "APX state" },
};

uint32_t restart_arch_id(void)
{
	return CKPT_ARCH_X86_64;
}

static uint64_t current_xcr0(void)
{
	unsigned a, b, c, d;
	uint32_t lo, hi;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return 3;	/* x87 and SSE, always there on x86_64 */
	__asm__ volatile ("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

static void append(char *why, size_t len, const char *text)
{
	size_t used = strlen(why);

	snprintf(why + used, len - used, "%s%s", used ? ", " : "", text);
}

int restart_arch_check_cpu(uint64_t saved, char *why, size_t len)
{
	uint64_t cur = current_xcr0(), missing = saved & ~cur;
	char other[64];
	size_t i;

	if (!missing)
		return 0;
	why[0] = '\0';
	for (i = 0; i < sizeof(xsave_components) / sizeof(*xsave_components);
	     i++) {
		if (missing & xsave_components[i].mask) {
			append(why, len, xsave_components[i].name);
			missing &= ~xsave_components[i].mask;
		}
	}
	for (i = 0; i < 64; i++) {
		if (missing & (1ULL << i)) {
			snprintf(other, sizeof(other), "XSAVE component %zu", i);
			append(why, len, other);
		}
	}
	snprintf(other, sizeof(other), " (saved XCR0 %#llx, this CPU %#llx)",
		 (unsigned long long)saved, (unsigned long long)cur);
	strncat(why, other, len - strlen(why) - 1);
	return -ENOTSUP;
}
