/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The contract between ckpt_restart and the freestanding loader blob it
 * execs (restart/loader): the blob's header, the loader's argv, and the
 * layout of the free address range ckpt_restart chooses for it.
 * Plain C, no libc: included on both sides.
 */
#ifndef CKPT_RESTART_LOADER_ABI_H
#define CKPT_RESTART_LOADER_ABI_H

#include <stdint.h>

/*
 * ckpt_restart_loader.bin starts with this header (written by the linker
 * script restart/loader/blob.lds). Every field but magic is an offset from
 * the blob's start, which is loaded at the chosen base address:
 *   [0, rx_end)          code and rodata, mapped read+exec
 *   [rx_end, data_end)   initialised data, mapped read+write
 *   [data_end, rw_end)   bss (incl. the loader's 256 KiB stack), zeroed
 */
#define LOADER_BLOB_MAGIC	0x3152444c54504b43ULL	/* "CKPTLDR1" */

struct loader_blob_header {
	uint64_t magic;
	uint64_t entry;
	uint64_t rx_end;		/* page-aligned */
	uint64_t data_end;
	uint64_t rw_end;		/* page-aligned */
};

/*
 * The loader's parameters, all strings; numbers in hex without 0x except
 * the fds (decimal). They are not its argv: ckpt_restart execs the loader
 * with the program's own argv and environment, so that the kernel's
 * argument area (/proc/PID/cmdline, environ) holds the program's strings.
 * Instead they sit in a read-only segment of LOADER_PARAMS_SIZE bytes
 * right after the blob's bss: LOADER_ARGC NUL-terminated strings in this
 * order, the first LOADER_PARAMS_MAGIC.
 */
#define LOADER_PARAMS_MAGIC	"ckpt_restart_loader"
#define LOADER_PARAMS_SIZE	(16ULL << 10)

/* the progress line's default interval (CKPT_PROGRESS_MS) */
#define LOADER_PROGRESS_MS 250

enum loader_arg {
	LOADER_ARG_IMAGE_FD = 1,	/* open image, not close-on-exec */
	LOADER_ARG_IMAGE_PATH,
	LOADER_ARG_COORD_ADDR,		/* "" = default */
	LOADER_ARG_CKPT_DIR,		/* "" = keep the saved one */
	LOADER_ARG_HEADER_HASH,		/* the header ckpt_restart validated */
	LOADER_ARG_RANGE_END,		/* end of the loader's free range */
	LOADER_ARG_PLAN_FD,		/* restart plan memfd, "0" = none */
	LOADER_ARG_KEEP_FD_END,		/* fds [plan fd, this) stay open */
	LOADER_ARG_MAP_IMAGE,		/* "1": map extents straight from
					   the image where they may be
					   (restart/memory_mode.c); "0": copy
					   every one */
	LOADER_ARG_LINK_FDS,		/* an incremental image's chain links
					   (image_links.c), open, not
					   close-on-exec: "fd,fd,...", in
					   link table order; "" = none */
	LOADER_ARG_PROGRESS,		/* milliseconds between redraws of
					   a progress line on stderr (a
					   terminal; the only loader of its
					   restart); "0": no line */
	LOADER_ARG_STOPPED,		/* "1": the restored process stops
					   itself (SIGSTOP) before any of its
					   threads runs program code, for a
					   debugger to attach (--stopped) */
	LOADER_ARGC
};

/*
 * The free range, from the base address up:
 *   loader blob [base, base + rw_end)
 *   parameters, LOADER_PARAMS_SIZE
 *   one unmapped page
 *   staging area for the kernel's [vvar]/[vdso] set, LOADER_STAGE_SIZE
 *   one unmapped page
 *   work area: the metadata block and the old vdso's saved code (read
 *   before the point of no return), LOADER_WORK_SIZE(their bytes)
 */
#define LOADER_PAGE		4096ULL
#define LOADER_STAGE_SIZE	(1ULL << 20)	/* vdso sets are ~32 KiB */
#define LOADER_WORK_SIZE(work_bytes) \
	((((uint64_t)(work_bytes) + LOADER_PAGE - 1) & ~(LOADER_PAGE - 1)) + \
	 LOADER_PAGE)

/* A restart that maps extents reads each one into this buffer of the
 * work area to verify it (restart/loader/extent_map.c); libckpt writes
 * extents of at most 4 MiB. */
#define LOADER_VERIFY_BUF	(4ULL << 20)

/* A chain's changed pages are put in by a thread of the loader with a
 * buffer and a stack of its own (restart/loader/extent_patch.c), in the
 * work area when extents are mapped from a chain. The buffer holds one
 * batch (256 scattered pages and the bytes between them in their file). */
#define LOADER_PATCH_BUF	(1ULL << 20)
#define LOADER_PATCH_STACK	(64ULL << 10)
#define LOADER_PATCH_WORK	(LOADER_PATCH_BUF + LOADER_PATCH_STACK)

/* The decompression of compressed extents (restart/loader/extent_decode.c):
 * per thread a zstd context, a buffer for one extent's stored bytes and
 * (helpers) a stack, plus a scratch TLS page; in the work area when the
 * image has a compressed extent. */
#define LOADER_DECODE_THREADS	4
#define LOADER_DECODE_DCTX	(256ULL << 10)	/* ZSTD_estimateDCtxSize()
						   is ~96 KiB */
#define LOADER_DECODE_STACK	(128ULL << 10)
#define LOADER_DECODE_WORK	(LOADER_PAGE + LOADER_DECODE_THREADS * \
				 (LOADER_DECODE_DCTX + CKPT_EXTENT_MAX + \
				  LOADER_DECODE_STACK))

/* work_bytes: metadata block + saved vdso code (page multiple) + the
 * verify buffer when extents are mapped (+ LOADER_PATCH_WORK from a
 * chain) + LOADER_DECODE_WORK for an image with compressed extents. */
static inline uint64_t loader_range_size(uint64_t rw_end, uint64_t work_bytes)
{
	return rw_end + LOADER_PARAMS_SIZE + LOADER_PAGE + LOADER_STAGE_SIZE +
	       LOADER_PAGE + LOADER_WORK_SIZE(work_bytes);
}

#endif /* CKPT_RESTART_LOADER_ABI_H */
