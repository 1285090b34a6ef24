/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where each thread of an image was at the checkpoint: its registers
 * from the signal frame the checkpoint signal left on its stack, unwound
 * by libunwind over the saved memory (a remote address space whose
 * accessors read the image), frames named from the mapped ELF files.
 */
#ifndef CKPT_RESTART_INSPECT_BACKTRACE_H
#define CKPT_RESTART_INSPECT_BACKTRACE_H

#include <stddef.h>
#include <stdint.h>
#include "image_check.h"
#include "inspect_memory.h"
#include "inspect_symbols.h"

#define BACKTRACE_MAX_FRAMES	64

struct frame {
	uint64_t pc;
	const char *function;		/* NULL: no symbol covers it */
	uint64_t offset;		/* pc - function start (or - 1 for a
					   return address) */
	const char *object;		/* the mapped file, NULL if none */
	uint64_t object_vaddr;		/* pc in the file's own addresses */
	const char *source_file;	/* base name, NULL without debug info */
	int source_line;		/* of the call, for a return address */
};

struct backtrace {
	struct frame frames[BACKTRACE_MAX_FRAMES];
	int nframes;
	/* "signal frame": all registers from the thread's signal frame;
	 * "pc and sp only": no frame found (libckpt's manager thread is
	 * stopped by a call, not a signal) */
	const char *registers;
	char stop[128];			/* why unwinding ended early, or "" */
};

struct inspect_unwinder;

struct inspect_unwinder *inspect_unwinder_new(struct ckpt_image *img);
void inspect_unwinder_free(struct inspect_unwinder *u);
/* A frame in words: "queue_pop (queue.c:88)" with debug info, else
 * "pthread_cond_wait", else "libc.so.6+0x8a3f4" (the file's own address,
 * for addr2line), else "0x7f...". */
void frame_text(const struct frame *fr, char *out, size_t len);
/* The whole backtrace on one line: "f <- g <- h". */
void backtrace_text(const struct backtrace *bt, char *out, size_t len);
/* What code address addr is (a signal handler): its function, file and
 * source line as a backtrace frame says them. */
void inspect_describe_code(struct inspect_unwinder *u, uint64_t addr,
			   struct frame *fr);
/* Unwind thread record i. */
void inspect_backtrace(struct inspect_unwinder *u, uint32_t i,
		       struct backtrace *bt);

#endif /* CKPT_RESTART_INSPECT_BACKTRACE_H */
