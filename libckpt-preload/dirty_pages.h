/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pages written since the previous incremental image (dirty_pages.c). */
#ifndef CKPT_DIRTY_PAGES_H
#define CKPT_DIRTY_PAGES_H

#include <stdint.h>

/* memory_scan, for an incremental image: a mapping [start, end) whose
 * pages may be referenced in the previous image (kind: CKPT_REGION_*). */
void dirty_pages_note_mapping(uint64_t start, uint64_t end, int kind);
/* A new memory scan begins: no mapping noted. */
void dirty_pages_forget_mappings(void);
/* Before the memory of the image of generation is read (threads
 * stopped): collect the pages written since the last protection of
 * every noted mapping (dirty_pages_rearm). 1 if the written pages are
 * known relative
 * to the image of base_generation (dirty_page_unwritten answers), 0 if
 * every page must be compared by its hash. */
int dirty_pages_collect(uint64_t base_generation, uint64_t generation);
/* After dirty_pages_collect returned 1: the page at addr was not
 * written since the base image was read. */
int dirty_page_unwritten(uint64_t addr);
/* The end of the unwritten run of pages from addr (addr itself when the
 * page at addr was written or is not tracked). */
uint64_t dirty_unwritten_until(uint64_t addr);
/* The image of generation is durable, the base of the next one, and
 * the program runs: protect its written pages again. */
void dirty_pages_rearm(uint64_t generation);
/* In a restarted process: nothing is tracked (the memory is new). */
void dirty_pages_after_restart(void);

#endif /* CKPT_DIRTY_PAGES_H */
