// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Shared memory objects several images map (regions of kind ANON_SHARED
 * with the same file_ino): one memfd each, of the object's size, filled
 * with the pages the images saved (every process was stopped at the same
 * moment, so their copies agree; together they cover every page any of
 * them had), handed to every process in the plan. libckpt maps it over
 * the private copy the loader made (libckpt-preload/shared_memory.c).
 * An object whose file processes also hold as an fd (a memfd shared
 * across fork) is the file restart_deleted_files.c made for those fds,
 * not a memfd of its own: writes through either reach the other.
 *
 * A SysV segment (its region named /SYSV...) comes back as a SysV segment,
 * also when one process attached it: a new IPC_PRIVATE segment with the
 * content, whose id goes into the plan beside the memfd; each process
 * attaches it at the saved address (SHM_REMAP) and marks it removed, so it
 * goes when the last process detaches. A program's shmdt() of it then
 * works, whichever way it reaches the kernel (UCX, under MPICH, detaches
 * with a raw system call).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ckpt/copy_range.h"
#include "process_tree.h"

static int is_shared_object(const struct ckpt_region *r)
{
	return r->kind == CKPT_REGION_ANON_SHARED && r->file_ino;
}

static int is_sysv(const struct ckpt_image *img, const struct ckpt_region *r)
{
	return !strncmp(image_string(img, r->name), "/SYSV", 5);
}

/* How many images map the object, how large it must be, and whether it
 * is a SysV segment; *mappings: how many mappings of it they hold in
 * all (a JIT maps one memfd twice in one process: writable and
 * executable views). */
static int object_users(struct ckpt_image *imgs, int n, uint64_t ino,
			uint64_t *size, int *sysv, int *mappings)
{
	int users = 0;

	*size = 0;
	*sysv = 0;
	*mappings = 0;
	for (int i = 0; i < n; i++) {
		int here = 0;

		for (uint32_t j = 0; j < imgs[i].hdr.nregions; j++) {
			const struct ckpt_region *r = &imgs[i].regions[j];

			if (!is_shared_object(r) || r->file_ino != ino)
				continue;
			here = 1;
			(*mappings)++;
			*sysv |= is_sysv(&imgs[i], r);
			if (r->file_offset + (r->end - r->start) > *size)
				*size = r->file_offset + (r->end - r->start);
		}
		users += here;
	}
	return users;
}

/* Does an image hold the object's file as an fd (a deleted file or memfd
 * still open)? Then files.c (or restart_deleted_files.c) makes the file
 * again and maps it for every mapping of the process. */
static int held_as_fd(struct ckpt_image *imgs, int n, uint64_t ino,
		      const char *name)
{
	uint32_t low = (uint32_t)(ino & ~CKPT_FD_SHARE_GROUP);

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			const struct ckpt_fd_info *f = &imgs[i].fds[j];

			if (f->kind == CKPT_FD_FILE_DELETED &&
			    (f->share & CKPT_FD_SHARE_GROUP) &&
			    (f->share & ~CKPT_FD_SHARE_GROUP) == low &&
			    !strcmp(image_string(&imgs[i], f->path), name))
				return 1;
		}
	return 0;
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

/* A memfd's or a deleted file's "PATH (deleted)": a file the kernel
 * shares between its mappings. Not a device's or kernel object's shared
 * mapping (an io_uring ring's "anon_inode:[io_uring]", mapped three
 * times from one inode at offsets far apart: never restored, nothing to
 * share). */
static int is_deleted_file_name(const char *name)
{
	size_t n = strlen(name), k = strlen(" (deleted)");

	return n > k && !strcmp(name + n - k, " (deleted)");
}

/* The name of the object's first region (its memfd's or deleted
 * file's "PATH (deleted)"), "" if none. */
static const char *object_name(struct ckpt_image *imgs, int n, uint64_t ino)
{
	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nregions; j++)
			if (is_shared_object(&imgs[i].regions[j]) &&
			    imgs[i].regions[j].file_ino == ino)
				return image_string(&imgs[i],
						    imgs[i].regions[j].name);
	return "";
}

/* The file behind the object: the one restart_deleted_files.c made for
 * the fds of the same file (a memfd held as an fd and mapped: one object
 * again), else a new memfd. At least size bytes long. */
static int object_file(struct ckpt_image *imgs, int n, uint64_t ino,
		       uint64_t size)
{
	int made = restart_deleted_file_fd(ino, object_name(imgs, n, ino));
	struct stat st;
	int fd;

	if (made >= 0) {
		fd = fcntl(made, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) == 0 && (uint64_t)st.st_size >= size)
			return fd;
	} else {
		fd = memfd_create("ckpt-shared-memory", MFD_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static int make_object(struct ckpt_image *imgs, int n, uint64_t ino,
		       uint64_t size)
{
	int memfd = object_file(imgs, n, ino, size), r = 0;

	if (memfd < 0)
		return memfd;
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

/* A new SysV segment with the memfd's content: its id, or -errno. It is
 * not marked removed here: the processes do so once attached (a
 * restart that fails before leaves it; ipcrm removes it). */
static int make_sysv_copy(int memfd, uint64_t size)
{
	int id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600), r = 0;
	char *mem;

	if (id < 0)
		return -errno;
	mem = shmat(id, NULL, 0);
	if (mem == (void *)-1) {
		r = -errno;
	} else {
		for (uint64_t done = 0; done < size && r == 0;) {
			ssize_t got = pread(memfd, mem + done, size - done,
					    (off_t)done);

			if (got <= 0)
				r = got < 0 ? -errno : -EIO;
			done += got > 0 ? (uint64_t)got : 0;
		}
		shmdt(mem);
	}
	if (r < 0)
		shmctl(id, IPC_RMID, NULL);
	return r < 0 ? r : id;
}

static int known(const struct ckpt_restart_plan *plan, uint64_t ino)
{
	for (uint32_t i = 0; i < plan->nshm; i++)
		if (plan->shm[i].ino == ino)
			return 1;
	return 0;
}

/* Whether the object at ino is one object of the plan: mapped by two
 * images or more, a SysV segment, or mapped twice by one image that
 * holds no fd of it (the BEAM JIT's memfd, writable and executable
 * views: code written through one runs through the other). *size and
 * *sysv as object_users says. */
static int needs_object(struct ckpt_image *imgs, int n, uint64_t ino,
			uint64_t *size, int *sysv)
{
	const char *name;
	int mappings;

	if (object_users(imgs, n, ino, size, sysv, &mappings) >= 2 || *sysv)
		return 1;
	if (mappings < 2)
		return 0;
	name = object_name(imgs, n, ino);
	return is_deleted_file_name(name) && !held_as_fd(imgs, n, ino, name);
}

int restart_shm_needed(struct ckpt_image *img)
{
	uint64_t size;
	int sysv;

	for (uint32_t j = 0; j < img->hdr.nregions; j++)
		if (is_shared_object(&img->regions[j]) &&
		    needs_object(img, 1, img->regions[j].file_ino, &size,
				 &sysv))
			return 1;
	return 0;
}

static int add_object(struct ckpt_image *imgs, int n, uint64_t ino,
		      struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	uint64_t size;
	int fd, placed, sysv, id = -1;

	if (known(plan, ino) || !needs_object(imgs, n, ino, &size, &sysv))
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
	if (sysv)
		id = make_sysv_copy(placed, size);
	if (id < -1)
		fprintf(stderr, "ckpt_restart: warning: SysV shared memory "
			"object %llu (%llu bytes): making the segment again "
			"failed: %s; it comes back as plain shared memory\n",
			(unsigned long long)ino, (unsigned long long)size,
			strerror(-id));
	plan->shm[plan->nshm].ino = ino;
	plan->shm[plan->nshm].fd = placed;
	plan->shm[plan->nshm].sysv_id = id >= 0 ? id + 1 : 0;
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
