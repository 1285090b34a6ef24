/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Opening and validating a checkpoint image (include/ckpt/image.h): the one
 * piece of code behind ckpt_restart and ckpt_inspect. Every function
 * returns 0 or -errno and, on failure, leaves "what failed: why" in
 * img->err for the caller to print after "program: IMAGE: ".
 */
#ifndef CKPT_RESTART_IMAGE_CHECK_H
#define CKPT_RESTART_IMAGE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ckpt/image.h"

/* Metadata above this is a corrupt size field, not a real process. */
#define IMAGE_META_MAX		(1ULL << 30)
/* A saved vdso above this is a corrupt region (they are a few pages; the
 * loader has the same limit, its staging area). */
#define VDSO_CODE_MAX		(1ULL << 20)

/* image_check_host() flags */
#define IMAGE_CPU_COMPAT	0x1	/* ckpt_restart --cpu-compat */

struct ckpt_image {
	const char *path;
	int fd;
	uint64_t file_size;
	struct ckpt_image_header hdr;
	unsigned char *meta;			/* malloc'd metadata block */
	const struct ckpt_region *regions;
	const struct ckpt_extent *extents;
	const struct ckpt_thread_info *threads;
	const struct ckpt_fd_info *fds;
	const struct ckpt_file_record *files;
	const struct ckpt_image_link *links;	/* nlinks: a delta's chain */
	/* version 7: NULL when not recorded */
	const struct ckpt_signal_state *signals;
	const struct ckpt_thread_signals *thread_signals;	/* [nthread_
							   signals] */
	int link_fds[CKPT_LINKS_MAX];		/* open, checked; -1 */
	const char *strings;
	uint64_t strings_size;
	bool vdso_redirect;		/* image_check_vdso(): another kernel */
	char err[1024];
	char warning[1024];		/* image_check_host(): "" or a line */
};

/* Open path (open_flags: O_CLOEXEC or 0) and check everything that can be
 * checked without reading the memory data: header, metadata, tables. */
int image_open(struct ckpt_image *img, const char *path, int open_flags);
void image_close(struct ckpt_image *img);
/* Every field the restart uses against what it does with it (brk, the
 * hand-off, stacks, TLS, threads, fd numbers...), image_fields.c; called
 * by image_open() once the tables lie inside the metadata. */
int image_check_fields(struct ckpt_image *img);

/* Can this machine restart it: architecture, page size, CPU features
 * (with IMAGE_CPU_COMPAT only those the saved threads hold; then
 * img->warning may say what the user vouches for), mapped files unchanged,
 * kernel special mappings (image_check_vdso). */
int image_check_host(struct ckpt_image *img, unsigned flags);
/* Same kernel special mappings as the checkpointing kernel, or another
 * kernel's and the image carries the old vdso's code: then
 * img->vdso_redirect is set (the loader redirects the old entry points). */
int image_check_vdso(struct ckpt_image *img);
/* Bytes of the saved vdso code the loader reads, 0 if none. */
int image_has_compressed_extents(const struct ckpt_image *img);
uint64_t image_vdso_code_size(const struct ckpt_image *img);
/* Read every extent and every content saved with an fd or file record
 * and check its hash (the loader checks the extents it restores itself;
 * ckpt_inspect checks all up front). */
int image_verify_data(struct ckpt_image *img);
/* What ckpt_restart and libckpt copy as it is, without the loader: the
 * content saved with fd records, shared memory objects' pages. */
int image_verify_restart_data(struct ckpt_image *img);
/* data_hash (ckpt_file_record, ckpt_fd_info) of size bytes at off, read
 * through buf (CKPT_FILE_HASH_CHUNK bytes). */
int image_content_hash(struct ckpt_image *img, uint64_t off, uint64_t size,
		       char *buf, uint64_t *hash);

const char *image_string(const struct ckpt_image *img, uint32_t off);
/* Thread record i's saved name; "" when unnamed or not saved. */
const char *image_thread_name(const struct ckpt_image *img, uint32_t i);

/* img->err = the message; returns -err. */
int image_fail(struct ckpt_image *img, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* len bytes at off of fd (the image or a link) into buf. */
int image_read_at(struct ckpt_image *img, int fd, void *buf, size_t len,
		  uint64_t off, const char *what);

/* Chains of incremental images (image_links.c). The link table: names
 * of files in the image's directory. */
int image_check_link_table(struct ckpt_image *img);
/* An extent's source: a link of the table, raw, not in a region that
 * ckpt_restart copies itself, its data inside the linked image. */
int image_check_extent_source(struct ckpt_image *img,
			      const struct ckpt_region *r,
			      const struct ckpt_extent *e);
/* Open every link and check that it is the image recorded: a missing,
 * replaced or damaged one is named. */
int image_open_links(struct ckpt_image *img);
void image_close_links(struct ckpt_image *img);
/* The descriptor that holds e's stored bytes. */
int image_extent_fd(const struct ckpt_image *img, const struct ckpt_extent *e);
/* The path of link i: the image's directory and the link's name. */
void image_link_path(const struct ckpt_image *img, uint32_t i, char *buf,
		     size_t len);
int image_socket_info(const struct ckpt_image *img,
		      const struct ckpt_fd_info *f,
		      struct ckpt_socket_info *si);
/* Forget the socket records image_socket_info read ahead from img. */
void image_forget_records(const struct ckpt_image *img);
const char *region_kind_name(uint32_t kind);
const char *fd_kind_name(uint32_t kind);
const char *arch_name(uint32_t arch);
int region_is_special(const struct ckpt_region *r);
int region_is_file(const struct ckpt_region *r);

/* restart/arch/<arch>/cpu_features.c */
uint32_t restart_arch_id(void);
/* This CPU's features as an image records them (x86_64: XCR0). */
uint64_t restart_arch_cpu_features(void);
/* The features of mask by name ("AVX-512 state, PKRU state"). */
void restart_arch_describe_features(uint64_t mask, char *out, size_t len);
/* 0 if this CPU can take the saved register state: every feature the
 * checkpointing CPU had or, with cpu_compat, every one the saved threads
 * hold (then, if some are missing, a warning line in warning). Else
 * -ENOTSUP and, in why, "this CPU lacks ..." with the components by name. */
int restart_arch_check_cpu(const struct ckpt_image_header *h, int cpu_compat,
			   char *why, size_t len, char *warning, size_t wlen);

/* Whether imgs (one checkpoint's, image_set.c) hold every process it
 * saved on each of their hosts: 0, or -1 after saying which host lacks
 * images (with partial: said as a warning, and 0). */
int image_set_check_complete(const struct ckpt_image *imgs, int n,
			     int partial);

#endif /* CKPT_RESTART_IMAGE_CHECK_H */
