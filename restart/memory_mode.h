/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whether the restart loader may map memory straight from an image or
 * must copy it (restart/memory_mode.c; the rule: docs/restart.md).
 */
#ifndef CKPT_RESTART_MEMORY_MODE_H
#define CKPT_RESTART_MEMORY_MODE_H

#include "image_check.h"

/* ckpt_restart --copy: copy every extent, map none. */
extern int restart_copy_memory;
/* --stopped: the restored process waits in SIGSTOP for a debugger */
extern int restart_stopped;

/* 1 when the loader may map img's extents (each extent is then still
 * judged on its own: restart/loader/extent_map.c); 0 when every byte is
 * copied, with the reason in *why. */
int image_memory_mapped_why(const struct ckpt_image *img, const char **why);
int image_memory_mapped(const struct ckpt_image *img);

#endif /* CKPT_RESTART_MEMORY_MODE_H */
