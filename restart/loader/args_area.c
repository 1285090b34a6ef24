// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The command line of the restarted process. ckpt_restart exec'd us with
 * the program's saved argv and environment, so the kernel's argument area
 * (mm arg_start..env_end, which /proc/PID/cmdline and environ read, and
 * which only PR_SET_MM could move) holds the program's strings, at the
 * top of our initial stack. The rest of that stack goes (clear.c); the
 * pages of the strings come back at the same address as a plain read-only
 * mapping (not the growsdown stack), unless an image region needs the
 * place: then they go too, and a note says so. libckpt leaves that
 * mapping out of later checkpoints (CKPT_RESTART_F_ARGS_KEPT).
 */
#include "loader.h"

static uint64_t area_len(const struct loader *l)
{
	return l->args_end - l->args_start;
}

static void give_up(struct loader *l)
{
	l->args_start = l->args_end = 0;
}

static const struct ckpt_region *colliding_region(const struct loader *l)
{
	for (uint32_t i = 0; i < l->hdr.nregions; i++) {
		const struct ckpt_region *r = &l->regions[i];

		if (r->start < l->args_end && l->args_start < r->end)
			return r;
	}
	return 0;
}

/* Before the point of no return: may the area stay, and a copy of it. */
void args_area_plan(struct loader *l)
{
	const struct ckpt_region *r;
	long ret;

	l->args_start &= ~(l->page_size - 1);
	l->args_end = page_up(l->args_end, l->page_size);
	if (l->args_start >= l->args_end)
		return give_up(l);
	r = colliding_region(l);
	if (r) {
		const char *name = image_string(l, r->name);

		loader_note("the program's command line area %lx-%lx is "
			    "needed by region %lx-%lx (%s): /proc/PID/cmdline "
			    "of the restarted process stays empty",
			    l->args_start, l->args_end, r->start, r->end,
			    name[0] ? name : "anonymous");
		return give_up(l);
	}
	ret = sys_mmap(0, area_len(l), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ret < 0) {
		loader_note("copying the command line area (%lu bytes) "
			    "failed: %s: /proc/PID/cmdline of the restarted "
			    "process stays empty", area_len(l),
			    errno_text(ret));
		return give_up(l);
	}
	l->args_copy = (uint64_t)ret;
	memcpy((void *)l->args_copy, (const void *)l->args_start,
	       area_len(l));
}

/* Right after clear.c unmapped the stack, before anything else is
 * mapped: the area again, at its address, and the copy gone. */
void args_area_restore(struct loader *l)
{
	long ret;

	if (!l->args_copy)
		return;
	ret = sys_mmap(l->args_start, area_len(l), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		       0);
	if (ret < 0 || (uint64_t)ret != l->args_start) {
		loader_note("mapping the command line area %lx-%lx again "
			    "failed: %s: /proc/PID/cmdline of the restarted "
			    "process stays empty", l->args_start, l->args_end,
			    ret < 0 ? errno_text(ret) : "address in use");
		if (ret > 0)
			sys_munmap((uint64_t)ret, area_len(l));
		sys_munmap(l->args_copy, area_len(l));
		l->args_copy = 0;
		return give_up(l);
	}
	memcpy((void *)l->args_start, (const void *)l->args_copy,
	       area_len(l));
	sys_mprotect(l->args_start, area_len(l), PROT_READ);
	sys_munmap(l->args_copy, area_len(l));
	l->args_copy = 0;
	l->args_kept = 1;
}
