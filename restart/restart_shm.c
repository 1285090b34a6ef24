// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Shared memory objects several images map (regions of kind ANON_SHARED
 * with the same file_ino): one memfd each, of the object's size, filled
 * with the pages the images saved (every process was stopped at the same
 * moment, so their copies agree; together they cover every page any of
 * them had), handed to every process in the plan. libckpt maps it over
 * the private copy the loader made (libckpt-preload/shared_memory.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ckpt/copy_range.h"
#include "process_tree.h"

static int is_shared_object(const struct ckpt_region *r)
{
	return r->kind == CKPT_REGION_ANON_SHARED && r->file_ino;
}

/* How many images map the object, and how large it must be. */
static int object_users(struct ckpt_image *imgs, int n, uint64_t ino,
			uint64_t *size)
{
	int users = 0;

	*size = 0;
	for (int i = 0; i < n; i++) {
		int here = 0;

		for (uint32_t j = 0; j < imgs[i].hdr.nregions; j++) {
			const struct ckpt_region *r = &imgs[i].regions[j];

			if (!is_shared_object(r) || r->file_ino != ino)
				continue;
			here = 1;
			if (r->file_offset + (r->end - r->start) > *size)
				*size = r->file_offset + (r->end - r->start);
		}
		users += here;
	}
	return users;
}

static int fill_from_region(const struct ckpt_image *img,
			    const struct ckpt_region *r, int memfd)
{
	for (uint64_t k = 0; k < r->nextents; k++) {
		const struct ckpt_extent *e = &img->extents[r->first_extent + k];
		int rc;

		if (lseek(memfd, (off_t)(r->file_offset + (e->addr - r->start)),
			  SEEK_SET) < 0)
			return -errno;
		rc = ckpt_copy_range(img->fd, e->file_offset, e->len, memfd);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int make_object(struct ckpt_image *imgs, int n, uint64_t ino,
		       uint64_t size)
{
	int memfd = memfd_create("ckpt-shared-memory", MFD_CLOEXEC), r = 0;

	if (memfd < 0)
		return -errno;
	if (ftruncate(memfd, (off_t)size) < 0)
		r = -errno;
	for (int i = 0; i < n && r == 0; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nregions && r == 0; j++)
			if (is_shared_object(&imgs[i].regions[j]) &&
			    imgs[i].regions[j].file_ino == ino)
				r = fill_from_region(&imgs[i],
						     &imgs[i].regions[j], memfd);
	if (r < 0) {
		close(memfd);
		return r;
	}
	return memfd;
}

static int known(const struct ckpt_restart_plan *plan, uint64_t ino)
{
	for (uint32_t i = 0; i < plan->nshm; i++)
		if (plan->shm[i].ino == ino)
			return 1;
	return 0;
}

static int add_object(struct ckpt_image *imgs, int n, uint64_t ino,
		      struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	uint64_t size;
	int fd, placed;

	if (known(plan, ino) || object_users(imgs, n, ino, &size) < 2)
		return 0;
	if (plan->nshm == CKPT_PLAN_MAX_SHM) {
		fprintf(stderr, "ckpt_restart: more than %d shared memory "
			"objects in the computation\n", CKPT_PLAN_MAX_SHM);
		return -E2BIG;
	}
	fd = make_object(imgs, n, ino, size);
	if (fd < 0) {
		fprintf(stderr, "ckpt_restart: shared memory object %llu "
			"(%llu bytes): %s\n", (unsigned long long)ino,
			(unsigned long long)size, strerror(-fd));
		return fd;
	}
	placed = place_handed(fd, keep_fd_end);
	/* kept across the loader's exec (memfd_create gave it CLOEXEC) */
	if (placed >= 0 && fcntl(placed, F_SETFD, 0) < 0)
		placed = -1;
	if (placed < 0) {
		fprintf(stderr, "ckpt_restart: cannot place shared memory "
			"object %llu at fd %d\n", (unsigned long long)ino,
			*keep_fd_end);
		return -EBADF;
	}
	plan->shm[plan->nshm].ino = ino;
	plan->shm[plan->nshm].fd = placed;
	plan->nshm++;
	return 0;
}

int restart_shm_create(struct ckpt_image *imgs, int n,
		       struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nregions; j++) {
			const struct ckpt_region *r = &imgs[i].regions[j];
			int rc;

			if (!is_shared_object(r))
				continue;
			rc = add_object(imgs, n, r->file_ino, plan,
					keep_fd_end);
			if (rc < 0)
				return rc;
		}
	return 0;
}
