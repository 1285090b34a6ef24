/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The checkpointed process's memory as ckpt_inspect reads it: saved
 * extents from the image (decompressed when zstd), pages of file
 * mappings from their files, everything else as zeros; read page by page
 * through a small cache, so a backtrace reads a few pages of a 1 GiB
 * image, never all of it.
 */
#ifndef CKPT_RESTART_INSPECT_MEMORY_H
#define CKPT_RESTART_INSPECT_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include "image_check.h"

#define INSPECT_PAGE		4096
#define INSPECT_CACHED_PAGES	64
#define INSPECT_OPEN_FILES	16

struct inspect_page {
	uint64_t addr;			/* page address, 1 when empty */
	unsigned char data[INSPECT_PAGE];
};

struct inspect_file {
	uint32_t name;			/* string table offset; 0 = free */
	int fd;				/* -1: could not be opened */
};

struct inspect_memory {
	struct ckpt_image *img;
	struct inspect_page pages[INSPECT_CACHED_PAGES];
	struct inspect_file files[INSPECT_OPEN_FILES];
	const struct ckpt_extent *zstd_extent;	/* held decompressed */
	unsigned char *zstd_data;
};

void inspect_memory_init(struct inspect_memory *m, struct ckpt_image *img);
void inspect_memory_free(struct inspect_memory *m);
/* The region holding addr, NULL if none. */
const struct ckpt_region *inspect_region_at(const struct ckpt_image *img,
					    uint64_t addr);
/* len bytes at addr of the checkpointed process: 0, or -EFAULT (not
 * mapped), -EIO (a read failed). */
int inspect_memory_read(struct inspect_memory *m, uint64_t addr, void *buf,
			size_t len);

/* Bytes of memory the region's extents hold. */
uint64_t region_saved_bytes(const struct ckpt_image *img,
			    const struct ckpt_region *r);
/* Bytes they take in the file, and how they are stored: "raw", "zstd",
 * "mixed" or "-" (nothing saved). */
uint64_t region_stored_bytes(const struct ckpt_image *img,
			     const struct ckpt_region *r,
			     const char **encoding);
/* open(path) read-only if it is a regular file, else -1. */
int open_regular_file(const char *path);

#endif /* CKPT_RESTART_INSPECT_MEMORY_H */
