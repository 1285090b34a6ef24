/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Exec the freestanding restart loader for one validated image, placed at
 * a free address range that no image region uses (restart/loader_exec.c).
 */
#ifndef CKPT_RESTART_LOADER_EXEC_H
#define CKPT_RESTART_LOADER_EXEC_H

#include <stddef.h>
#include "image_check.h"

/* The loader range is searched from here up, away from where programs,
 * their libraries and stacks usually live (0x55.., 0x7f..). */
#define LOADER_SEARCH_START	0x100000000000ULL
#define LOADER_SEARCH_END	0x700000000000ULL
#define LOADER_MARGIN		(1ULL << 30)

/* Only returns on failure: -errno, with "what failed: why" in err. The
 * image's fd must not be close-on-exec. */
int loader_exec(const struct ckpt_image *img, const char *image_path,
		const char *coord_addr, const char *ckpt_dir, char *err,
		size_t errlen);

/* The lowest base >= LOADER_SEARCH_START with size bytes free and
 * LOADER_MARGIN clear of every region; 0 and -ENOMEM if none. */
int loader_choose_base(const struct ckpt_image *img, uint64_t size,
		       uint64_t *base);

#endif /* CKPT_RESTART_LOADER_EXEC_H */
