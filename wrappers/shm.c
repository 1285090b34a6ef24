/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SysV shared memory: a segment the program had attached at the
 * checkpoint comes back as a plain shared mapping at the same address
 * (libckpt-preload/shared_memory.c), so the kernel's shmdt() does not
 * know it. Detaching it unmaps it, as shmdt would have.
 */
#include <sys/shm.h>
#include "wrappers.h"

DEFINE_NEXT(shmdt);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_shm(void)
{
	RESOLVE_NEXT(shmdt);
}

CKPT_WRAPPER int shmdt(const void *addr)
{
	int r = NEXT_FN(shmdt)(addr);

	if (r == 0 || errno != EINVAL)
		return r;
	r = shared_memory_detach_restored(addr);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}
