/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The freestanding restart loader: rebuilds a checkpointed address space
 * and jumps into libckpt's restore entry. No libc; raw syscalls only
 * (sys.h). The sequence reads top to bottom in main.c; docs/restart.md
 * tells the story.
 */
#ifndef CKPT_LOADER_H
#define CKPT_LOADER_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "ckpt/image.h"
#include "ckpt/restart_args.h"
#include "sys.h"

#define LOADER_MAX_MAPS		128	/* lines of our own /proc/self/maps */
#define LOADER_MAX_SPECIALS	8	/* [vvar], [vvar_vclock], [vdso], ... */
#define LOADER_NAME_MAX		32

/* One line of /proc/self/maps; name truncated, enough for "[...]". */
struct maps_entry {
	uint64_t start, end;
	char name[LOADER_NAME_MAX];
};

/* A set of kernel special mappings ([vvar], [vdso], ...). */
struct special_set {
	unsigned n;
	struct maps_entry map[LOADER_MAX_SPECIALS];
};

/* What happens to the kernel's special mappings (vdso.c). */
enum vdso_mode {
	VDSO_DROP,		/* the image has none: unmap ours */
	VDSO_MOVE,		/* same kernel: ours go to the saved addresses */
	VDSO_REDIRECT,		/* another kernel: ours stay staged; the old
				   vdso code returns to its address, its entry
				   points sent on to ours (vdso_redirect.c) */
};

#define LOADER_MAX_VDSO_ENTRIES	64
#define VDSO_ENTRY_MISSING	(~0ULL)

/* One entry point of the old vdso: where it is, where it goes. */
struct vdso_patch {
	uint64_t old_off;		/* from the start of the old [vdso] */
	uint64_t new_off;		/* from the start of ours, or MISSING */
};

struct vdso_plan {
	enum vdso_mode mode;
	const struct ckpt_region *old_vdso;	/* the image's [vdso] or 0 */
	unsigned char *old_code;	/* its saved bytes (work area) or 0 */
	unsigned npatches;
	struct vdso_patch patch[LOADER_MAX_VDSO_ENTRIES];
};

struct loader {
	/* From argv and auxv (args.c). */
	int image_fd;
	int plan_fd;			/* 0: none */
	uint64_t keep_fd_end;		/* fds [plan_fd, keep_fd_end) kept */
	int map_image;			/* extents may be mapped from the
					   image (extent_map.c) */
	uint64_t progress_ms;		/* redraw a progress line every so
					   many ms, 0: none (progress.c) */
	uint64_t image_mapped_at;	/* inside the first one mapped; 0 */
	int link_fds[CKPT_LINKS_MAX];	/* chain links (chain.c) */
	unsigned nlinks;
	unsigned map_source;		/* the one file mapped from: 0 the
					   image, n link n-1 */
	uint64_t map_source_bytes;	/* its bytes that may be mapped */
	unsigned char *verify_buf;	/* LOADER_VERIFY_BUF bytes or 0 */
	char image_path[4096];
	char coord_addr[512];
	char ckpt_dir[4096];
	uint64_t header_hash;
	uint64_t page_size;
	uint64_t auxv_vdso;		/* AT_SYSINFO_EHDR */
	/* The kernel's argument area (args_area.c): the strings, then
	 * page-rounded; a copy while the stack goes; kept or not. */
	uint64_t args_start, args_end;
	uint64_t args_copy;
	int args_kept;
	int stopped;		/* LOADER_ARG_STOPPED */

	/* Our free range (main.c): blob, staging area, work area. */
	uint64_t self_start, self_end;
	uint64_t stage_start, stage_end;
	uint64_t work_next, work_end;
	struct ckpt_range own[CKPT_LOADER_MAX_MAPPINGS];
	unsigned nown;

	/* The image (image.c). */
	struct ckpt_image_header hdr;
	const unsigned char *meta;
	const struct ckpt_region *regions;
	const struct ckpt_extent *extents;
	const struct ckpt_image_link *links;	/* nlinks, or NULL */
	const char *strings;
	uint64_t strings_size;

	/* The address space as the kernel gave it to us (maps.c). */
	struct maps_entry maps[LOADER_MAX_MAPS];
	unsigned nmaps;
	struct special_set specials;	/* current set, then staged */
	struct vdso_plan vdso;
};

/* args.c */
void parse_kernel_stack(struct loader *l, const uint64_t *sp);

/* main.c */
uint64_t work_alloc(struct loader *l, uint64_t len);
uint64_t work_alloc_populated(struct loader *l, uint64_t len);

/* image.c */
void image_read(struct loader *l);
const char *image_string(const struct loader *l, uint32_t off);
int region_is_special(const struct ckpt_region *r);

/* maps.c */
void maps_read(struct loader *l);

/* args_area.c */
void args_area_plan(struct loader *l);
void args_area_restore(struct loader *l);

/* clear.c */
void clear_address_space(struct loader *l);

/* regions.c */
void map_regions(struct loader *l);
void region_read_data(const struct loader *l, const struct ckpt_region *r,
		      unsigned char *dst);
void read_extent(const struct loader *l, const struct ckpt_extent *e,
		 unsigned char *dst);

/* chain.c */
void chain_parse_link_fds(struct loader *l, const char *arg);
void chain_read_links(struct loader *l);
void chain_choose_map_source(struct loader *l);
int extent_source_fd(const struct loader *l, const struct ckpt_extent *e);
const char *extent_source_name(const struct loader *l,
			       const struct ckpt_extent *e);

/* extent_map.c */
int extent_mappable_kind(const struct loader *l, const struct ckpt_region *r,
			 const struct ckpt_extent *e);
int extent_span(const struct loader *l, const struct ckpt_region *r,
		const struct ckpt_extent *e, uint64_t n, uint64_t i,
		uint64_t *last);
void map_span(struct loader *l, const struct ckpt_extent *e, uint64_t first,
	      uint64_t last);
void verify_span(const struct loader *l, const struct ckpt_extent *e,
		 uint64_t first, uint64_t last);
void extent_map_prepare(struct loader *l);

/* extent_patch.c */
void extent_patch_prepare(struct loader *l);
void patch_region_start(const struct loader *l, const struct ckpt_region *r);
void patch_region_finish(void);
int extent_patchable(const struct loader *l, const struct ckpt_extent *e);

/* threads.c: a helper thread of the loader's own */
struct loader_thread {
	unsigned char *stack_top;	/* in the work area */
	int tid;			/* cleared by the kernel at exit */
};
int loader_thread_start(struct loader_thread *t, void (*fn)(void *),
			void *arg);
void loader_thread_join(struct loader_thread *t, const char *what);

/* extent_decode.c */
void extent_decode_prepare(struct loader *l);
void extent_decode_queue(const struct loader *l, const struct ckpt_extent *e,
			 unsigned char *dst);
void extent_decode_wait(const struct loader *l);

/* vdso.c */
void specials_collect(struct loader *l);
void specials_plan(struct loader *l);
void specials_stage(struct loader *l);
void specials_place(struct loader *l);
long move_mapping(uint64_t from, uint64_t len, uint64_t to);

/* vdso_redirect.c */
void vdso_plan_redirect(struct vdso_plan *p, uint64_t old_size,
			const unsigned char *cur, uint64_t cur_size);
void vdso_redirect(const struct vdso_plan *p, unsigned char *copy,
		   uint64_t cur_start);

/* handoff.c */
void hand_off(struct loader *l) __attribute__((noreturn));

/* progress.c: the progress line on a terminal (LOADER_ARG_PROGRESS) */
void progress_start(const struct loader *l, uint64_t every_ms);
void progress_add(uint64_t bytes);
void progress_clear(void);

/* report.c */
void report_set_image(const char *path);
void loader_fail(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
void loader_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
size_t fmt_v(char *buf, size_t cap, const char *fmt, va_list ap);
size_t fmt_v_args(char *buf, size_t cap, const char *fmt, ...);
const char *errno_text(long err);

/* string.c (memcpy, memset, memmove, memcmp are there for the compiler) */
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t str_len(const char *s);
int str_eq(const char *a, const char *b);
int str_starts(const char *s, const char *prefix);
size_t str_copy(char *dst, const char *src, size_t cap);
int parse_u64(const char *s, unsigned base, uint64_t *out);

static inline uint64_t page_up(uint64_t v, uint64_t page)
{
	return (v + page - 1) & ~(page - 1);
}

#endif /* CKPT_LOADER_H */
