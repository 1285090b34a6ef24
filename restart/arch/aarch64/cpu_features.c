// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * aarch64: an image's cpu_features is the part of the checkpointing CPU's
 * AT_HWCAP that decides what register state a thread may hold (FP,
 * Advanced SIMD, SVE); cpu_features_in_use what the saved threads really
 * hold (SVE only when a signal frame carried an SVE record). A frame with
 * SVE state cannot be returned to on a CPU without SVE (rt_sigreturn
 * fails and the thread dies with SIGSEGV), so that is refused here.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include "../../image_check.h"

#define HWCAP_STATE_MASK	((1ULL << 0) | (1ULL << 1) | (1ULL << 22))

uint32_t restart_arch_id(void)
{
	return CKPT_ARCH_AARCH64;
}

uint64_t restart_arch_cpu_features(void)
{
	return getauxval(AT_HWCAP) & HWCAP_STATE_MASK;
}

/* "SVE state, Advanced SIMD state" */
void restart_arch_describe_features(uint64_t missing, char *out,
				     size_t len)
{
	snprintf(out, len, "%s%s%s", missing & (1ULL << 22) ? "SVE state " : "",
		 missing & (1ULL << 1) ? "Advanced SIMD state " : "",
		 missing & (1ULL << 0) ? "FP state " : "");
	if (out[0])
		out[strlen(out) - 1] = '\0';
}

int restart_arch_check_cpu(const struct ckpt_image_header *h, int cpu_compat,
			   char *why, size_t len, char *warning, size_t wlen)
{
	uint64_t cur = restart_arch_cpu_features(), missing = h->cpu_features & ~cur;
	uint64_t held = h->cpu_features_in_use & ~cur;
	char names[64];

	warning[0] = '\0';
	if (!missing)
		return 0;
	restart_arch_describe_features(cpu_compat ? held : missing, names, sizeof(names));
	if (!cpu_compat || held) {
		snprintf(why, len, "this CPU lacks %s (saved HWCAP %#llx, "
			 "threads hold %#llx, this CPU %#llx)%s", names,
			 (unsigned long long)h->cpu_features,
			 (unsigned long long)h->cpu_features_in_use,
			 (unsigned long long)cur, held ? ": not even "
			 "--cpu-compat can restart it" : "; if the program "
			 "never uses it, see ckpt_restart --cpu-compat");
		return -ENOTSUP;
	}
	restart_arch_describe_features(missing, names, sizeof(names));
	snprintf(warning, wlen, "warning: --cpu-compat: this CPU lacks %s, "
		 "which no saved thread holds; you guarantee that the program "
		 "never uses it", names);
	return 0;
}
