/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory shared between processes: MAP_SHARED anonymous memory inherited
 * across fork, memfds, deleted /dev/shm files (POSIX semaphores and
 * multiprocessing's locks live there), SysV segments. Every process's
 * image holds its own copy of the pages (a single image restarts alone);
 * the region records name the object (file_ino, file_offset).
 *
 * Saved (at DO_SUSPEND): the shared mappings of this process, in memory.
 * Restored: ckpt_restart makes one memfd per object that several images
 * map, with the content (restart/restart_shm.c), and hands it over in the
 * plan; here, before any thread runs (and before files.c moves the
 * handed fds), each such mapping is replaced in
 * place by a MAP_SHARED mapping of that memfd, so the processes share the
 * memory again (one semaphore, not one copy per process).
 *
 * A SysV segment comes back as one: ckpt_restart made a new segment with
 * its content (restart/restart_shm.c), attached here at the saved address
 * with SHM_REMAP and marked removed, so the kernel's shmdt() knows it.
 * When that fails the segment is a plain mapping of the memfd, and the
 * program's shmdt() of it (postgres at shutdown) would fail with EINVAL:
 * the addresses where such segments start are kept (in memory that every
 * later image saves) and the shmdt wrapper unmaps them instead
 * (wrappers/shm.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>
#include "ckpt/restart_plan.h"
#include "internal.h"

#define MAX_SHARED_REGIONS 256

static struct shared_region regions[MAX_SHARED_REGIONS];
static int nregions;
/* restored from a memfd of the restart plan (several images map it); from
 * the file files.c made again for an fd of this process */
static unsigned char from_plan[MAX_SHARED_REGIONS];
static unsigned char from_file[MAX_SHARED_REGIONS];

/* Restored SysV segments still mapped: [start, end) of each. */
#define MAX_SYSV 64
static struct { uint64_t start, end; } sysv[MAX_SYSV];
static int nsysv;

/* Note the SysV segment of region r (its parts are contiguous regions of
 * one object). */
static void note_sysv(const struct shared_region *r)
{
	for (int i = 0; i < nsysv; i++) {
		if (sysv[i].end == r->start && r->offset) {
			sysv[i].end = r->end;
			return;
		}
		if (sysv[i].start == r->start)
			return;
	}
	if (nsysv < MAX_SYSV)
		sysv[nsysv++] = (typeof(sysv[0])){ r->start, r->end };
}

/* shmdt(addr) of a segment restored as a plain mapping: unmapped. 0, or
 * -EINVAL when addr is not where one starts. */
int shared_memory_detach_restored(const void *addr)
{
	for (int i = 0; i < nsysv; i++) {
		if (sysv[i].start != (uintptr_t)addr)
			continue;
		if (munmap((void *)addr, sysv[i].end - sysv[i].start) < 0)
			return -errno;
		sysv[i] = sysv[--nsysv];
		return 0;
	}
	return -EINVAL;
}

static int shared_memory_save(void)
{
	int n = memory_shared_regions(regions, MAX_SHARED_REGIONS);

	if (n < 0)
		return n;
	nregions = n;
	return 0;
}

static int remap_shared(const struct shared_region *r, int fd)
{
	void *want = (void *)(uintptr_t)r->start;
	void *got = mmap(want, r->end - r->start, (int)r->prot,
			 MAP_SHARED | MAP_FIXED, fd, (off_t)r->offset);

	if (got == MAP_FAILED) {
		int e = errno;
		char link[64], what[256] = "";

		ckpt_fmt(link, sizeof(link), "/proc/self/fd/%d", fd);
		if (readlink(link, what, sizeof(what) - 1) < 0)
			what[0] = 0;
		ckpt_log("shared memory at %p (object %llu): mapping the "
			 "restored copy (fd %d: %s, flags %#x) failed: %s",
			 want, (unsigned long long)r->ino, fd, what,
			 fcntl(fd, F_GETFL), strerror(e));
		return -e;
	}
	return 0;
}

static const struct ckpt_plan_shm *handed(const struct ckpt_plan_shm *shm,
					  int n, uint64_t ino)
{
	for (int i = 0; i < n; i++)
		if (shm[i].ino == ino)
			return &shm[i];
	return NULL;
}

/* The new SysV segment over the whole segment that starts at region r
 * (its first part): 0, or -errno after saying why. */
static int attach_sysv(const struct shared_region *r, int id)
{
	int flags = SHM_REMAP | (r->prot & PROT_WRITE ? 0 : SHM_RDONLY) |
		    (r->prot & PROT_EXEC ? SHM_EXEC : 0);
	void *got = shmat(id, (void *)(uintptr_t)r->start, flags);

	if (got == (void *)-1) {
		int e = errno;

		ckpt_log("SysV shared memory at %p (object %llu): attaching "
			 "the restored segment %d failed: %s; it stays a plain "
			 "shared mapping", (void *)(uintptr_t)r->start,
			 (unsigned long long)r->ino, id, strerror(e));
		return -e;
	}
	shmctl(id, IPC_RMID, NULL);	/* gone with the last process */
	return 0;
}

/* One part of a SysV segment: attached with its first part (offset 0),
 * its own protection set again. */
static int restore_sysv_part(const struct shared_region *r,
			     const struct ckpt_plan_shm *h, int *attached)
{
	if (r->offset == 0)
		*attached = attach_sysv(r, h->sysv_id - 1) == 0;
	if (!*attached)
		return -1;
	return mprotect((void *)(uintptr_t)r->start, r->end - r->start,
			(int)r->prot) < 0 ? -1 : 0;
}

/* Before files.c moves the handed fds (they are closed with the rest of
 * the plan's fds there). */
static int shared_memory_restore(const struct ckpt_restart_args *args)
{
	static struct ckpt_plan_shm shm[CKPT_PLAN_MAX_SHM];
	int n = handover_read_shm(args->plan_fd, shm, CKPT_PLAN_MAX_SHM), r = 0;
	int attached = 0;	/* the segment of the last offset-0 part */

	if (n < 0) {
		ckpt_log("cannot read the shared memory of the restart plan: "
			 "%s", strerror(-n));
		return n;
	}
	for (int i = 0; i < nregions && r == 0; i++) {
		const struct ckpt_plan_shm *h = handed(shm, n, regions[i].ino);

		if (h && regions[i].sysv && h->sysv_id > 0 &&
		    restore_sysv_part(&regions[i], h, &attached) == 0)
			continue;
		if (regions[i].sysv)
			note_sysv(&regions[i]);
		from_plan[i] = h != NULL;
		from_file[i] = 0;
		if (h)
			r = remap_shared(&regions[i], h->fd);
	}
	return r;
}

/* files.c made the deleted file (memfd, unlinked file) of device dev and
 * inode ino again, open in rw_fd: the mappings of it that no other image
 * maps (each a shared anonymous copy of its own from the loader) become
 * MAP_SHARED mappings of that file, so the program's fd and its mappings
 * are one object again. The file holds the same content (both were saved
 * at one moment). */
void shared_memory_attach_file(uint64_t dev, uint64_t ino, int rw_fd)
{
	for (int i = 0; i < nregions; i++)
		if (regions[i].ino == ino && regions[i].dev == dev &&
		    !regions[i].sysv && !from_plan[i] &&
		    !from_file[i])
			from_file[i] = remap_shared(&regions[i], rw_fd) == 0;
}

const struct ckpt_resource_ops shared_memory_resource_ops = {
	.name = "shared memory",
	.save = shared_memory_save,
	.restore = shared_memory_restore,
};
