// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Hand the rebuilt address space to libckpt: fill struct ckpt_restart_args
 * in our bss, quiet the process (signals blocked, stray fds closed), take
 * the restored main thread's TLS base and call header.restore_entry on
 * header.restore_stack_top. libckpt restores threads, fds and signals and
 * unmaps the loader (args.loader_mappings) once it has copied the args.
 * The staging area is not listed: after a cross-kernel restart this
 * kernel's vdso set stays there (vdso.c).
 */
#include <linux/prctl.h>
#include "loader.h"

static struct ckpt_restart_args restart_args;

static void fill_args(const struct loader *l, struct ckpt_restart_args *a)
{
	unsigned i;

	a->magic = CKPT_RESTART_ARGS_MAGIC;
	a->version = CKPT_RESTART_ARGS_VERSION;
	a->image_fd = l->image_fd;
	str_copy(a->image_path, l->image_path, sizeof(a->image_path));
	str_copy(a->coord_addr, l->coord_addr, sizeof(a->coord_addr));
	str_copy(a->ckpt_dir, l->ckpt_dir, sizeof(a->ckpt_dir));
	a->nloader_mappings = l->nown;
	for (i = 0; i < l->nown; i++)
		a->loader_mappings[i] = l->own[i];
	/* Always, not only for --cpu-compat: libckpt fits the saved
	 * register state to this CPU. */
	a->current_xcr0 = arch_current_xcr0();
}

/* Keep 0, 1, 2 (the restarting terminal) and the image. */
static void close_other_fds(int keep)
{
	long err = 0;
	int fd;

	if (keep > 3)
		err = sys_close_range(3, keep - 1);
	if (!err)
		err = sys_close_range(keep >= 3 ? keep + 1 : 3, ~0U);
	if (err == -38)		/* ENOSYS: kernel before 5.9 */
		for (fd = 3; fd < 65536; fd++)
			if (fd != keep)
				sys_close(fd);
}

/* ps shows the program again instead of the loader's memfd. */
static void set_program_name(const struct loader *l)
{
	char name[16];

	str_copy(name, l->hdr.program, sizeof(name));
	if (name[0])
		sys_prctl(PR_SET_NAME, (unsigned long)name);
}

void hand_off(struct loader *l)
{
	long err;

	fill_args(l, &restart_args);
	set_program_name(l);
	err = sys_block_all_signals();
	if (err)
		loader_fail("blocking signals failed: %s", errno_text(err));
	close_other_fds(l->image_fd);
	err = arch_set_tls(l->hdr.restore_tls);
	if (err)
		loader_fail("setting the TLS base to %lx failed: %s",
			    l->hdr.restore_tls, errno_text(err));
	arch_jump_to_restore(l->hdr.restore_entry, l->hdr.restore_stack_top,
			     &restart_args);
}
