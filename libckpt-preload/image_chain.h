/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Incremental images (image_chain.c). */
#ifndef CKPT_IMAGE_CHAIN_H
#define CKPT_IMAGE_CHAIN_H

#include <stddef.h>
#include <stdint.h>
#include "ckpt/image.h"

struct image_writer;

/* The memory of an incremental image into fd, from CKPT_HEADER_SIZE on:
 * changed pages written, the others referenced in the previous image or
 * its links (w's extent table is replaced, its links filled), then the
 * page hashes; the chain fields of h set, *end after the last byte. */
int chain_write_memory(struct image_writer *w, int fd, const char *dir,
		       struct ckpt_image_header *h, uint64_t *end,
		       char *err, size_t errlen);
/* An image that is no member of a chain was written. */
void chain_write_plain(void);
/* The image written last is durable at path: the base of the next one;
 * a full one removes this process's older images. */
void chain_image_committed(const char *path, uint64_t generation);
/* Once its checkpoint has answered, the program running: the written
 * pages' protection for the next image (dirty_pages.c). */
void chain_image_answered(uint64_t generation);
/* The images of this process in dir older than generation (a full image
 * of it is durable). */
void chain_remove_older_images(const char *dir, uint64_t generation);

/* Background compaction of a chain (image_compact.c): started once the
 * head at path (chain_length images) is durable and the checkpoint has
 * answered; polled then; stopped before any checkpoint writes. */
void compaction_start(const char *path, uint64_t generation,
		      uint32_t chain_length);
void compaction_poll(void);
void compaction_stop(void);
/* In a restarted process: no helper is ours. */
void compaction_forget(void);

#endif /* CKPT_IMAGE_CHAIN_H */
