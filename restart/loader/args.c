// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The loader's parameters (restart/loader_abi.h: a segment of their own,
 * since argv is the program's) copied into our bss, and from the kernel's
 * initial stack the auxiliary vector and where the argument strings lie:
 * that stack is unmapped later because it may sit where the image wants
 * memory; only the pages of the strings may stay (args_area.c).
 */
#include <linux/auxvec.h>
#include "loader.h"
#include "../loader_abi.h"

static void copy_arg(char *dst, size_t cap, const char *src, const char *what)
{
	if (str_copy(dst, src, cap) >= cap)
		loader_fail("loader argument %s: too long (max %zu bytes)",
			    what, cap - 1);
}

static uint64_t number_arg(const char *s, unsigned base, const char *what)
{
	uint64_t v;

	if (parse_u64(s, base, &v))
		loader_fail("loader argument %s: not a number: '%s'", what, s);
	return v;
}

static void read_auxv(struct loader *l, const uint64_t *auxv)
{
	for (; auxv[0] != AT_NULL; auxv += 2) {
		if (auxv[0] == AT_PAGESZ)
			l->page_size = auxv[1];
		else if (auxv[0] == AT_SYSINFO_EHDR)
			l->auxv_vdso = auxv[1];
	}
}

/* The strings of our parameter segment (restart/loader_abi.h), right
 * after the blob's bss. */
extern char __rw_end[] __attribute__((visibility("hidden")));

static void read_params(const char *param[LOADER_ARGC])
{
	const char *p = __rw_end, *end = __rw_end + LOADER_PARAMS_SIZE;

	for (int i = 0; i < LOADER_ARGC; i++) {
		param[i] = p;
		while (p < end && *p)
			p++;
		if (p == end)
			loader_fail("the loader's parameters are damaged "
				    "(parameter %d is not terminated)", i);
		p++;
	}
	if (!str_eq(param[0], LOADER_PARAMS_MAGIC))
		loader_fail("the restart loader was started without its "
			    "parameters; run it through ckpt_restart");
}

/* The kernel's argument area: the argv and environment strings, which
 * /proc/PID/cmdline and environ read (args_area.c keeps it). */
static void note_args_area(struct loader *l, char *const *strs)
{
	uint64_t lo = ~0ULL, hi = 0, s, e;

	for (; *strs; strs++) {
		s = (uint64_t)*strs;
		e = s + str_len(*strs) + 1;
		lo = s < lo ? s : lo;
		hi = e > hi ? e : hi;
	}
	if (hi > l->args_end)
		l->args_end = hi;
	if (lo < hi && (!l->args_start || lo < l->args_start))
		l->args_start = lo;
}

/* sp: argc, argv[argc], NULL, envp..., NULL, auxv pairs, AT_NULL */
void parse_kernel_stack(struct loader *l, const uint64_t *sp)
{
	uint64_t argc = sp[0];
	const uint64_t *p = sp + 1 + argc + 1;
	const char *param[LOADER_ARGC];
	uint64_t fd;

	read_params(param);
	copy_arg(l->image_path, sizeof(l->image_path),
		 param[LOADER_ARG_IMAGE_PATH], "image path");
	report_set_image(l->image_path);
	copy_arg(l->coord_addr, sizeof(l->coord_addr),
		 param[LOADER_ARG_COORD_ADDR], "coordinator address");
	copy_arg(l->ckpt_dir, sizeof(l->ckpt_dir), param[LOADER_ARG_CKPT_DIR],
		 "checkpoint directory");
	fd = number_arg(param[LOADER_ARG_IMAGE_FD], 10, "image fd");
	if (fd > 0x7fffffff)
		loader_fail("loader argument image fd: out of range: %lu", fd);
	l->image_fd = (int)fd;
	l->header_hash = number_arg(param[LOADER_ARG_HEADER_HASH], 16,
				    "header hash");
	l->work_end = number_arg(param[LOADER_ARG_RANGE_END], 16, "range end");
	fd = number_arg(param[LOADER_ARG_PLAN_FD], 10, "plan fd");
	l->map_image = str_eq(param[LOADER_ARG_MAP_IMAGE], "1");
	l->keep_fd_end = number_arg(param[LOADER_ARG_KEEP_FD_END], 10,
				    "kept fds");
	if (fd > 65535 || l->keep_fd_end > 65536 ||
	    (fd && (fd < 3 || l->keep_fd_end <= fd)))
		loader_fail("loader arguments plan fd %lu, kept fds up to %lu: "
			    "out of range", fd, l->keep_fd_end);
	l->plan_fd = (int)fd;
	chain_parse_link_fds(l, param[LOADER_ARG_LINK_FDS]);
	l->progress_ms = number_arg(param[LOADER_ARG_PROGRESS], 10,
				    "progress interval");
	if (l->progress_ms > 60000)
		loader_fail("loader argument progress interval %lu ms: out "
			    "of range", l->progress_ms);
	l->stopped = str_eq(param[LOADER_ARG_STOPPED], "1");

	note_args_area(l, (char *const *)(sp + 1));
	note_args_area(l, (char *const *)p);
	while (*p)		/* skip the environment */
		p++;
	read_auxv(l, p + 1);
	if (l->page_size == 0)
		l->page_size = 4096;
}
