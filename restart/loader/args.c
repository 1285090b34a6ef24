// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The loader's arguments (restart/loader_abi.h) and auxiliary vector, read
 * from the kernel's initial stack and copied into our bss: that stack is
 * unmapped later because it may sit where the image wants memory.
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

/* sp: argc, argv[argc], NULL, envp..., NULL, auxv pairs, AT_NULL */
void parse_kernel_stack(struct loader *l, const uint64_t *sp)
{
	uint64_t argc = sp[0];
	char *const *argv = (char *const *)(sp + 1);
	const uint64_t *p = sp + 1 + argc + 1;
	uint64_t fd;

	if (argc != LOADER_ARGC)
		loader_fail("the restart loader was started with %lu arguments "
			    "instead of %d; run it through ckpt_restart", argc,
			    LOADER_ARGC);
	copy_arg(l->image_path, sizeof(l->image_path),
		 argv[LOADER_ARG_IMAGE_PATH], "image path");
	report_set_image(l->image_path);
	copy_arg(l->coord_addr, sizeof(l->coord_addr),
		 argv[LOADER_ARG_COORD_ADDR], "coordinator address");
	copy_arg(l->ckpt_dir, sizeof(l->ckpt_dir), argv[LOADER_ARG_CKPT_DIR],
		 "checkpoint directory");
	fd = number_arg(argv[LOADER_ARG_IMAGE_FD], 10, "image fd");
	if (fd > 0x7fffffff)
		loader_fail("loader argument image fd: out of range: %lu", fd);
	l->image_fd = (int)fd;
	l->header_hash = number_arg(argv[LOADER_ARG_HEADER_HASH], 16,
				    "header hash");
	l->work_end = number_arg(argv[LOADER_ARG_RANGE_END], 16, "range end");
	fd = number_arg(argv[LOADER_ARG_PLAN_FD], 10, "plan fd");
	l->keep_fd_end = number_arg(argv[LOADER_ARG_KEEP_FD_END], 10,
				    "kept fds");
	if (fd > 65535 || l->keep_fd_end > 65536 ||
	    (fd && (fd < 3 || l->keep_fd_end <= fd)))
		loader_fail("loader arguments plan fd %lu, kept fds up to %lu: "
			    "out of range", fd, l->keep_fd_end);
	l->plan_fd = (int)fd;

	while (*p)		/* skip the environment */
		p++;
	read_auxv(l, p + 1);
	if (l->page_size == 0)
		l->page_size = 4096;
}
