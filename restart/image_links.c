/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Chains of incremental images (docs/image-format.md, "Chains of
 * incremental images"): a delta's extents may lie in the images of its
 * link table, files of its own directory named there and identified by
 * generation, size and header hash. Every link is opened and checked here,
 * before anything irreversible, so a missing, replaced or damaged one is
 * named: "chain link ckpt_x.g3.img (generation 3): ...". The extent hashes
 * still check every byte taken from a link when it is restored.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "image_check.h"

int image_check_link_table(struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;

	if (h->nlinks > CKPT_LINKS_MAX)
		return image_fail(img, EINVAL, "%u chain links, at most %d: "
				  "the image is corrupt", h->nlinks,
				  CKPT_LINKS_MAX);
	if (h->nlinks && !(h->flags & CKPT_IMG_F_CHAIN))
		return image_fail(img, EINVAL, "chain links in an image that "
				  "is no member of a chain: the image is "
				  "corrupt");
	for (uint32_t i = 0; i < h->nlinks; i++) {
		uint32_t off = img->links[i].name;
		const char *name;

		if (!off || off >= img->strings_size)
			return image_fail(img, EINVAL, "chain link %u: its name "
					  "lies outside the string table", i);
		name = image_string(img, off);
		if (strchr(name, '/') || !strcmp(name, ".") ||
		    !strcmp(name, ".."))
			return image_fail(img, EINVAL, "chain link %u: '%s' is "
					  "not a file name", i, name);
	}
	return 0;
}

int image_check_extent_source(struct ckpt_image *img,
			      const struct ckpt_region *r,
			      const struct ckpt_extent *e)
{
	const struct ckpt_image_link *l;

	if (!e->source)
		return 0;
	if (e->source > img->hdr.nlinks)
		return image_fail(img, EINVAL, "memory %llx-%llx: its data lies "
				  "in chain link %u, the image has %u",
				  (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len),
				  e->source, img->hdr.nlinks);
	/* ckpt_restart copies these itself, from the image (restart_shm.c,
	 * the vdso code); the loader maps only raw data from a link */
	if (r->kind == CKPT_REGION_ANON_SHARED || r->kind == CKPT_REGION_VDSO ||
	    e->encoding != CKPT_EXTENT_RAW)
		return image_fail(img, EINVAL, "memory %llx-%llx: a %s extent "
				  "of a %s region lies in a chain link: the "
				  "image is corrupt",
				  (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len),
				  e->encoding == CKPT_EXTENT_RAW ? "raw" :
				  "compressed", region_kind_name(r->kind));
	l = &img->links[e->source - 1];
	if (e->file_offset < CKPT_HEADER_SIZE ||
	    e->file_offset % img->hdr.page_size ||
	    e->file_offset > l->image_size ||
	    e->len > l->image_size - e->file_offset)
		return image_fail(img, EINVAL, "memory %llx-%llx: its data "
				  "(%llu bytes at offset %llu) lies outside "
				  "chain link %s",
				  (unsigned long long)e->addr,
				  (unsigned long long)(e->addr + e->len),
				  (unsigned long long)e->len,
				  (unsigned long long)e->file_offset,
				  image_string(img, l->name));
	return 0;
}

void image_link_path(const struct ckpt_image *img, uint32_t i, char *buf,
		     size_t len)
{
	const char *slash = strrchr(img->path, '/');
	const char *name = image_string(img, img->links[i].name);

	if (slash)
		snprintf(buf, len, "%.*s/%s", (int)(slash - img->path),
			 img->path, name);
	else
		snprintf(buf, len, "%s", name);
}

/* The header of link i, read from fd, is the one recorded. */
static int check_link_header(struct ckpt_image *img, uint32_t i, int fd,
			     const char *what)
{
	const struct ckpt_image_link *l = &img->links[i];
	unsigned char page[CKPT_HEADER_SIZE];
	struct ckpt_image_header h;
	struct stat st;
	int err;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return image_fail(img, EINVAL, "%s: not a regular file", what);
	if ((uint64_t)st.st_size < CKPT_HEADER_SIZE)
		return image_fail(img, EINVAL, "%s: truncated (%lld bytes): "
				  "damaged or replaced", what,
				  (long long)st.st_size);
	err = image_read_at(img, fd, page, sizeof(page), 0, what);
	if (err)
		return err;
	memcpy(&h, page, sizeof(h));
	if (memcmp(h.magic, CKPT_IMAGE_MAGIC, 8) ||
	    h.header_size < CKPT_HEADER_SIZE_MIN ||
	    h.header_size > CKPT_HEADER_SIZE ||
	    ckpt_header_hash(page, h.header_size) != h.header_hash)
		return image_fail(img, EINVAL, "%s: its header is damaged (not "
				  "a ckpt image, or a checksum mismatch)",
				  what);
	if (h.header_hash != l->header_hash || h.generation != l->generation ||
	    strncmp(h.unique_id, img->hdr.unique_id, sizeof(h.unique_id)))
		return image_fail(img, EINVAL, "%s: replaced: it is not the "
				  "image this one was made from (generation "
				  "%llu of %.64s, header hash %016llx; "
				  "recorded: %016llx)", what,
				  (unsigned long long)h.generation,
				  h.unique_id,
				  (unsigned long long)h.header_hash,
				  (unsigned long long)l->header_hash);
	if ((uint64_t)st.st_size != l->image_size)
		return image_fail(img, EINVAL, "%s: damaged: %lld bytes, its "
				  "header says %llu", what,
				  (long long)st.st_size,
				  (unsigned long long)l->image_size);
	return 0;
}

int image_open_links(struct ckpt_image *img)
{
	char path[4096], what[4200];
	int err;

	for (uint32_t i = 0; i < img->hdr.nlinks; i++) {
		image_link_path(img, i, path, sizeof(path));
		snprintf(what, sizeof(what), "chain link %s (generation %llu)",
			 path, (unsigned long long)img->links[i].generation);
		img->link_fds[i] = open(path, O_RDONLY | O_NONBLOCK |
					O_NOFOLLOW | O_CLOEXEC);
		if (img->link_fds[i] < 0)
			return image_fail(img, errno, "%s: cannot open: %s: this "
					  "incremental image needs it", what,
					  strerror(errno));
		err = check_link_header(img, i, img->link_fds[i], what);
		if (err)
			return err;
	}
	return 0;
}

void image_close_links(struct ckpt_image *img)
{
	for (int i = 0; i < CKPT_LINKS_MAX; i++) {
		if (img->link_fds[i] >= 0)
			close(img->link_fds[i]);
		img->link_fds[i] = -1;
	}
}

int image_extent_fd(const struct ckpt_image *img, const struct ckpt_extent *e)
{
	if (!e->source)
		return img->fd;
	return e->source <= CKPT_LINKS_MAX ? img->link_fds[e->source - 1] : -1;
}
