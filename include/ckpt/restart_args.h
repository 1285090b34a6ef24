/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hand-off from the restart loader (restart/loader) to libckpt's
 * restore entry inside the restored memory. Not on disk; versioned anyway
 * because the loader and the library in an image may come from different
 * builds.
 */
#ifndef CKPT_RESTART_ARGS_H
#define CKPT_RESTART_ARGS_H

#include <stdint.h>

#define CKPT_RESTART_ARGS_MAGIC		0x434b50545253544cULL /* "CKPTRSTL" */
/* Version 2 appends plan_fd/keep_fd_end (a restart of several processes
 * or with pipes); a loader passes 1 when it has no plan, so libckpt of
 * older images still accepts it. libckpt accepts both. */
/* Version 3 appends image_mapped_at (a restart that mapped memory
 * straight from the image). */
#define CKPT_RESTART_ARGS_VERSION	3
#define CKPT_LOADER_MAX_MAPPINGS	8

/* ckpt_restart_args.flags */
#define CKPT_RESTART_F_ARGS_KEPT	0x1	/* the loader kept the pages of
						   the kernel's argument area
						   (/proc/self/stat arg_start
						   to env_end, page-rounded)
						   mapped, holding the saved
						   command line: not part of
						   the program's memory */
#define CKPT_RESTART_F_STOPPED		0x2	/* ckpt_restart --stopped: stop
						   the whole process (SIGSTOP)
						   once every thread is back,
						   before any runs program
						   code, for a debugger */

struct ckpt_range {
	uint64_t start;
	uint64_t end;
};

struct ckpt_restart_args {
	uint64_t magic;			/* CKPT_RESTART_ARGS_MAGIC */
	uint32_t version;		/* CKPT_RESTART_ARGS_VERSION */
	int32_t image_fd;		/* still open: deleted-file contents */
	char image_path[4096];
	char coord_addr[512];		/* coordinator to join; "" = default */
	char ckpt_dir[4096];		/* "" = keep the directory saved */
	/* The loader's own mappings: libckpt unmaps them when done. */
	uint32_t nloader_mappings;
	uint32_t flags;			/* CKPT_RESTART_F_*; was reserved (0) */
	struct ckpt_range loader_mappings[CKPT_LOADER_MAX_MAPPINGS];
	uint64_t current_xcr0;		/* x86_64: xgetbv(0) of this CPU */
	/* Version 2. The restart plan (include/ckpt/restart_plan.h), open
	 * read-only; fds [plan_fd, keep_fd_end) were kept open by the loader
	 * for libckpt (the pipes of the plan). -1/0 when there is none. */
	int32_t plan_fd;
	int32_t keep_fd_end;
	/* Version 3. An address inside memory the loader mapped from the
	 * image (MAP_PRIVATE of image_fd); 0: none, everything copied.
	 * libckpt reads that mapping's device and inode from
	 * /proc/self/maps to know such memory later (restart_image.c). */
	uint64_t image_mapped_at;
};

#endif /* CKPT_RESTART_ARGS_H */
