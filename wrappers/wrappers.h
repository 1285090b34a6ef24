/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wrapper discipline: every wrapper is exported with CKPT_WRAPPER and
 * reaches the function it replaces through NEXT_FN (dlsym RTLD_NEXT, looked
 * up once). Wrappers that can be interrupted by the checkpoint signal
 * retry when ckpt_interrupted() says the interruption was ours, so no
 * EINTR caused by a checkpoint reaches the program.
 */
#ifndef CKPT_WRAPPERS_H
#define CKPT_WRAPPERS_H

#include <dlfcn.h>
#include <errno.h>
#include "../libckpt-preload/internal.h"

#define CKPT_WRAPPER __attribute__((visibility("default")))

#define NEXT_FN(name)                                                     \
	({                                                                \
		static __typeof__(&name) next_##name;                     \
		if (!next_##name)                                         \
			next_##name = (__typeof__(&name))dlsym(RTLD_NEXT,   \
							       #name);      \
		next_##name;                                              \
	})

/* True when a call that started with interrupt count `before` failed with
 * EINTR because of a checkpoint (and not of the program's own signal). */
static inline int ckpt_interrupted(int rc, unsigned before)
{
	return rc == -1 && errno == EINTR && ckpt_interrupts != before;
}

/* Evaluate `call` (an int-returning expression) again for as long as it
 * fails with an EINTR that a checkpoint caused. */
#define RETRY_IF_CHECKPOINTED(call)                                       \
	({                                                                \
		unsigned before_;                                         \
		int rc_;                                                  \
		do {                                                      \
			before_ = ckpt_interrupts;                        \
			rc_ = (call);                                     \
		} while (ckpt_interrupted(rc_, before_));                 \
		rc_;                                                      \
	})

#endif /* CKPT_WRAPPERS_H */
