// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Get out of the image's way: unmap every mapping the kernel gave us that
 * is not ours ([stack] above all, it sits at a random address that the
 * image may need), except the kernel's special mappings, which vdso.c
 * moves. From here on there is no way back to ckpt_restart.
 */
#include "loader.h"

static int is_own(const struct loader *l, const struct maps_entry *e)
{
	return e->start >= l->self_start && e->end <= l->work_end;
}

/* [vvar], [vvar_vclock], [vdso], [vsyscall] and whatever "[v..." comes
 * next: moved (vdso.c) or left alone ([vsyscall], fixed and harmless). */
static int is_kernel_special(const struct maps_entry *e)
{
	return str_starts(e->name, "[v");
}

void clear_address_space(struct loader *l)
{
	const struct maps_entry *e;
	long err;
	unsigned i;

	for (i = 0; i < l->nmaps; i++) {
		e = &l->maps[i];
		if (is_own(l, e) || is_kernel_special(e))
			continue;
		err = sys_munmap(e->start, e->end - e->start);
		if (err)
			loader_fail("unmapping %lx-%lx %s out of the image's "
				    "way failed: %s", e->start, e->end, e->name,
				    errno_text(err));
	}
}
