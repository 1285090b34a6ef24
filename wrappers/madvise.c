// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Anonymous-memory semantics for memory a restart mapped from its image
 * (libckpt-preload/restart_image.c). On private anonymous memory
 * MADV_DONTNEED and MADV_FREE leave zero pages, which allocators rely on
 * (jemalloc takes purged pages as zeroed); on a private file mapping they
 * would bring back the image's bytes, and MADV_FREE would fail. So the
 * advised image-backed pages are first replaced by fresh anonymous
 * memory with the same protection. A mremap that grows such memory gets
 * a zero tail, not the image's next bytes (or SIGBUS past its end).
 * Calls that do not touch image-backed memory go straight through.
 * Limit: raw syscalls and glibc's internal calls (realloc's mremap of a
 * large block) bypass these wrappers (docs/restart.md).
 */
#include <stdarg.h>
#include <sys/mman.h>
#include "wrappers.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

DEFINE_NEXT(madvise);
DEFINE_NEXT(mremap);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_madvise(void)
{
	RESOLVE_NEXT(madvise);
	RESOLVE_NEXT(mremap);
}

/* -errno, or 1 when the advice needs no more than what was done. */
static int make_advisable(void *addr, size_t len, int advice)
{
	switch (advice) {
	case MADV_DONTNEED:
	case MADV_DONTNEED_LOCKED:
	case MADV_FREE:
		return restart_image_make_anonymous(addr, len, 0);
	case MADV_WIPEONFORK:	/* anonymous memory only */
		return restart_image_make_anonymous(addr, len, 1);
	case MADV_REMOVE:	/* as on private anonymous memory */
		return -EINVAL;
	default:
		return 0;
	}
}

CKPT_WRAPPER int madvise(void *addr, size_t len, int advice)
{
	sigset_t old;
	int r;

	if (!restart_image_may_back(addr, len) || (uintptr_t)addr % 4096)
		return NEXT_FN(madvise)(addr, len, advice);
	old = ckpt_block_checkpoints();
	r = make_advisable(addr, len, advice);
	if (r == 0)
		r = NEXT_FN(madvise)(addr, len, advice);
	ckpt_restore_mask(&old);
	if (r < 0 && r != -1) {
		errno = -r;
		r = -1;
	}
	return r;
}

CKPT_WRAPPER void *mremap(void *old_addr, size_t old_size, size_t new_size,
			  int flags, ...)
{
	void *new_addr = NULL, *p;
	sigset_t old;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if (!restart_image_may_back(old_addr, old_size))
		return NEXT_FN(mremap)(old_addr, old_size, new_size, flags,
				       new_addr);
	old = ckpt_block_checkpoints();
	p = NEXT_FN(mremap)(old_addr, old_size, new_size, flags, new_addr);
	if (p != MAP_FAILED) {
		restart_image_moved_to(p, new_size);
		if (new_size > old_size)
			restart_image_make_anonymous((char *)p + old_size,
						     new_size - old_size, 0);
	}
	ckpt_restore_mask(&old);
	return p;
}
