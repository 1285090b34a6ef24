/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Exec the freestanding restart loader for one validated image, placed at
 * a free address range that no image region uses (restart/loader_exec.c).
 */
#ifndef CKPT_RESTART_LOADER_EXEC_H
#define CKPT_RESTART_LOADER_EXEC_H

#include <stddef.h>
#include "image_check.h"

/*
 * Where the loader goes. Preferred: below the image's heap, so that the
 * kernel's program break is never above the restored heap (a brk() from
 * glibc's saved break would then "succeed" with the kernel's own, higher
 * break over memory that is not mapped: a thread stopped inside sbrk at
 * the checkpoint crashes malloc after the restart). With the break anchor
 * (loader_exec.c, brk_anchor) the break lands exactly on the saved heap
 * and the loader needs only its own size below it, anywhere above
 * LOADER_LOW_START: fixed-address (non-PIE) programs, whose heap lies
 * less than 1 GiB above their data, get it too. Without the anchor
 * (CKPT_RESTART_ASLR=1) it also needs room for the kernel's randomised
 * break (up to 1 GiB after the loader's bss), so that the break stays
 * below the heap and a later brk() fails honestly. Only when there is no
 * room below the heap: high up, away from programs (0x55..), libraries
 * and stacks (0x7f..). Regions are kept LOADER_MARGIN away (the gap
 * between a program's data and its heap, LOADER_LOW_MARGIN).
 */
#define LOADER_LOW_START	0x100000ULL
#define LOADER_HIGH_START	0x100000000000ULL
#define LOADER_HIGH_END		0x700000000000ULL
#define LOADER_BRK_WINDOW	((1ULL << 30) + 4096)
#define LOADER_MARGIN		(16ULL << 20)
#define LOADER_LOW_MARGIN	(1ULL << 20)

/* Only returns on failure: -errno, with "what failed: why" in err. The
 * image's fd must not be close-on-exec. plan_fd (0: none) and the fds up
 * to keep_fd_end stay open for libckpt (restart/process_tree.c). */
int loader_exec(const struct ckpt_image *img, const char *image_path,
		const char *coord_addr, const char *ckpt_dir, int plan_fd,
		int keep_fd_end, char *err, size_t errlen);

/* A base for a loader range of size bytes, LOADER_MARGIN clear of every
 * region: below the heap if possible, else high; -ENOMEM if none. */
int loader_choose_base(const struct ckpt_image *img, uint64_t size,
		       uint64_t *base);

#endif /* CKPT_RESTART_LOADER_EXEC_H */
