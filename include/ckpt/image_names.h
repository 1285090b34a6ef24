/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The file name of a process's image in its checkpoint directory
 * (docs/image-format.md): "ckpt_<program>_<unique id>.img", replaced by
 * each checkpoint, or for a member of a chain of incremental images
 * "ckpt_<program>_<unique id>.g<generation>.img", never replaced while a
 * later image may link to it. Used by libckpt and the coordinator.
 */
#ifndef CKPT_IMAGE_NAMES_H
#define CKPT_IMAGE_NAMES_H

#include <stdint.h>
#include <stdio.h>

static inline void image_final_name(char *buf, size_t len,
				    const char *program,
				    const char *unique_id, int chain,
				    uint64_t generation)
{
	if (chain)
		snprintf(buf, len, "ckpt_%s_%s.g%llu.img", program, unique_id,
			 (unsigned long long)generation);
	else
		snprintf(buf, len, "ckpt_%s_%s.img", program, unique_id);
}

#endif /* CKPT_IMAGE_NAMES_H */
