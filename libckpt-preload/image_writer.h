/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The image writer's tables, shared by image_writer.c (every image) and
 * image_chain.c (incremental images): mmap'd arrays, so that no malloc
 * runs while the threads are stopped.
 */
#ifndef CKPT_IMAGE_WRITER_H
#define CKPT_IMAGE_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include "ckpt/image.h"

struct table {
	char *base;
	size_t elem, n, cap;
};

struct blob {
	int fd;			/* the process's own descriptor, or -1: */
	const void *mem;	/* the content in memory (a socket record) */
	uint64_t size;
	uint32_t index;		/* which record gets the offset */
	int is_file;		/* a ckpt_file_record, else a ckpt_fd_info */
};

struct image_writer {
	struct table regions, extents, threads, fds, files, strings, blobs;
	struct table links;			/* incremental: struct
					   ckpt_image_link */
	struct table signal_state;		/* 0 or 1 struct
					   ckpt_signal_state (signals.c) */
	struct table thread_signals;		/* ckpt_thread_signals, in
					   thread-record order */
	uint64_t brk_start, brk_end;
	int has_brk;
	uint32_t cmdline, cmdline_size;		/* in the string table */
	uint32_t environment, environment_size;
	uint32_t thread_names, thread_names_size;
	int32_t manager_vtid;
	int chain;				/* an incremental image */
	int zero_pages_later;			/* memory_scan keeps pages of
						   zeros; memory_drop_zero_pages
						   (in a forked copy) drops them */
};

#include <sys/types.h>

/* len bytes at off, whatever short writes and EINTR: 0 or -errno. */
int write_all(int fd, const void *buf, size_t len, off_t off);
struct iovec;
/* All n buffers at off, in order (iov is used up). */
int pwritev_all(int fd, struct iovec *iov, int n, uint64_t off);
int table_reserve(struct table *t, size_t more);
void *table_push(struct table *t);
void table_free(struct table *t);
/* Offset of a copy of s in the string table; 0 is the empty string. */
int add_string(struct image_writer *w, const char *s, uint32_t *off);

/* What the copy of a forked checkpoint writes (forked_copy.c). */
struct forked_image {
	uint64_t generation;
	int compress;
	const char *dir;
	const char *tmp_path;
};

/* memory.c: in a forked checkpoint's copy, the extents without their
 * pages of zeros, as memory_scan would have made them. */
int memory_drop_zero_pages(struct image_writer *w);
int image_write_in_copy(struct image_writer *w, const struct forked_image *img,
			char *err, size_t errlen);
int forked_copy_start(struct image_writer *w, const struct forked_image *img,
		      char *err, size_t errlen);
int forked_copy_hold_data(struct image_writer *w, char *err, size_t errlen);
int forked_copy_holds_changing_data(const struct image_writer *w);
/* snapshot_template.c: keep the snapshot as a frozen template process;
 * *pid its pid. -EOPNOTSUPP: no template here (the caller writes an
 * image instead). */
void template_note_coordinator(pid_t pid);
void template_reap_helper(void);
int template_start(struct image_writer *w, const struct forked_image *img,
		   const char *final_path, int memory_scanned, pid_t *pid,
		   char *err, size_t errlen);
/* Whether a template needs w's memory tables made before it is forked
 * (MAP_SHARED anonymous memory, which it copies). */
int template_needs_memory_scan(void);

#endif /* CKPT_IMAGE_WRITER_H */
