// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * x86_64: an image's cpu_features is the XCR0 of the checkpointing CPU, the
 * set of XSAVE state components its threads may hold. Restarting on a CPU
 * (or kernel) without one of them would lose registers or fault in XRSTOR.
 * cpu_features_in_use is what the saved threads really hold (the union of
 * their signal frames' XSTATE_BV): with --cpu-compat only that must be
 * here, and the user vouches that the program never turns to the rest
 * (glibc picks AVX-512 string functions at start-up if the CPU has them).
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

uint64_t restart_arch_cpu_features(void)
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

/* "AVX-512 state, XSAVE component 62" */
void restart_arch_describe_features(uint64_t missing, char *out, size_t len)
{
	char other[64];
	size_t i;

	out[0] = '\0';
	for (i = 0; i < sizeof(xsave_components) / sizeof(*xsave_components);
	     i++) {
		if (missing & xsave_components[i].mask) {
			append(out, len, xsave_components[i].name);
			missing &= ~xsave_components[i].mask;
		}
	}
	for (i = 0; i < 64; i++) {
		if (missing & (1ULL << i)) {
			snprintf(other, sizeof(other), "XSAVE component %zu", i);
			append(out, len, other);
		}
	}
}

/* x87 and SSE are always in use; 0 = an image from before the field:
 * everything the checkpointing CPU had. */
static uint64_t features_in_use(const struct ckpt_image_header *h)
{
	return h->cpu_features_in_use ? h->cpu_features_in_use | 3
				      : h->cpu_features;
}

static const char *glibc_hint(uint64_t missing)
{
	if (missing & (7ULL << 5))
		return "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,"
		       "-AVX512BW,-AVX512DQ,-AVX512CD,-AVX512ER,-AVX512PF";
	return "GLIBC_TUNABLES=glibc.cpu.hwcaps=... keeping glibc off them";
}

int restart_arch_check_cpu(const struct ckpt_image_header *h, int cpu_compat,
			   char *why, size_t len, char *warning, size_t wlen)
{
	uint64_t cur = restart_arch_cpu_features();
	uint64_t missing = h->cpu_features & ~cur;
	uint64_t held = features_in_use(h) & ~cur;
	char names[256];

	warning[0] = '\0';
	if (!missing)
		return 0;
	if (!cpu_compat) {
		restart_arch_describe_features(missing, names, sizeof(names));
		snprintf(why, len, "this CPU lacks %s (saved XCR0 %#llx, this "
			 "CPU %#llx); if the program never uses it, see "
			 "ckpt_restart --cpu-compat", names,
			 (unsigned long long)h->cpu_features,
			 (unsigned long long)cur);
		return -ENOTSUP;
	}
	if (!h->cpu_features_in_use) {
		restart_arch_describe_features(missing, names, sizeof(names));
		snprintf(why, len, "this CPU lacks %s (saved XCR0 %#llx, this "
			 "CPU %#llx), and the image does not record which "
			 "state its threads hold (made by an older ckpt): not "
			 "even --cpu-compat can restart it", names,
			 (unsigned long long)h->cpu_features,
			 (unsigned long long)cur);
		return -ENOTSUP;
	}
	if (held) {
		restart_arch_describe_features(held, names, sizeof(names));
		snprintf(why, len, "this CPU lacks %s, which the saved threads "
			 "hold (their state %#llx, this CPU's XCR0 %#llx): "
			 "not even --cpu-compat can restart it", names,
			 (unsigned long long)features_in_use(h),
			 (unsigned long long)cur);
		return -ENOTSUP;
	}
	restart_arch_describe_features(missing, names, sizeof(names));
	snprintf(warning, wlen, "warning: --cpu-compat: this CPU lacks %s "
		 "(saved XCR0 %#llx, this CPU %#llx), which no saved thread "
		 "holds; you guarantee that the program never uses it (e.g. "
		 "it was started with %s)", names,
		 (unsigned long long)h->cpu_features, (unsigned long long)cur,
		 glibc_hint(missing));
	return 0;
}
