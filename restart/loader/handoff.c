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
	/* The lowest version that carries what we pass, so that libckpt of
	 * older images accepts it (mapped memory only with a libckpt that
	 * knows it: CKPT_IMG_F_MAPPABLE). */
	a->version = l->image_mapped_at ? 3 : l->plan_fd ? 2 : 1;
	a->plan_fd = l->plan_fd ? l->plan_fd : -1;
	a->keep_fd_end = l->plan_fd ? (int32_t)l->keep_fd_end : 0;
	a->image_fd = l->image_fd;
	a->flags = (l->args_kept ? CKPT_RESTART_F_ARGS_KEPT : 0) |
		   (l->stopped ? CKPT_RESTART_F_STOPPED : 0);
	str_copy(a->image_path, l->image_path, sizeof(a->image_path));
	str_copy(a->coord_addr, l->coord_addr, sizeof(a->coord_addr));
	str_copy(a->ckpt_dir, l->ckpt_dir, sizeof(a->ckpt_dir));
	a->nloader_mappings = l->nown;
	for (i = 0; i < l->nown; i++)
		a->loader_mappings[i] = l->own[i];
	/* Always, not only for --cpu-compat: libckpt fits the saved
	 * register state to this CPU. */
	a->current_xcr0 = arch_current_xcr0();
	a->image_mapped_at = l->image_mapped_at;
}

struct fd_span {
	unsigned start, end;		/* [start, end) */
};

/* Close [from, to) (to = ~0U: everything above); ENOSYS before 5.9. */
static long close_fds_between(unsigned from, unsigned to)
{
	if (from >= to)
		return 0;
	return sys_close_range(from, to == ~0U ? ~0U : to - 1);
}

/* Keep 0, 1, 2 (the restarting terminal), the image and the fds of the
 * restart plan (the plan and the pipes libckpt hands out). */
static void close_other_fds(const struct loader *l)
{
	struct fd_span keep[2] = {
		{ l->image_fd, l->image_fd + 1 },
		{ l->plan_fd, l->plan_fd ? l->keep_fd_end : 0 },
	};
	unsigned from = 3;
	long err = 0;
	int fd;

	if (keep[1].start < keep[0].start) {
		struct fd_span t = keep[0];

		keep[0] = keep[1];
		keep[1] = t;
	}
	for (int i = 0; i < 2 && !err; i++) {
		if (keep[i].start >= keep[i].end)
			continue;
		err = close_fds_between(from, keep[i].start);
		if (keep[i].end > from)
			from = keep[i].end;
	}
	if (!err)
		err = close_fds_between(from, ~0U);
	if (err == -38)
		for (fd = 3; fd < 65536; fd++)
			if (fd != l->image_fd && (!l->plan_fd ||
			    fd < l->plan_fd || (uint64_t)fd >= l->keep_fd_end))
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
	close_other_fds(l);
	err = arch_set_tls(l->hdr.restore_tls);
	if (err)
		loader_fail("setting the TLS base to %lx failed: %s",
			    l->hdr.restore_tls, errno_text(err));
	arch_jump_to_restore(l->hdr.restore_entry, l->hdr.restore_stack_top,
			     &restart_args);
}
