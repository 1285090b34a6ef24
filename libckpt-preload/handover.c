/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What ckpt_restart handed over in the restart plan
 * (include/ckpt/restart_plan.h) besides the pid map: both ends of every
 * pipe of the computation, the ends of its socket pairs, and the open
 * file descriptions that several
 * processes shared (one open file, one offset). Every fd of the plan is
 * moved where no saved fd goes before files.c restores anything; files.c
 * takes what its saved fds had, then they are closed.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ckpt/restart_plan.h"
#include "internal.h"

static struct ckpt_plan_pipe pipes[CKPT_PLAN_MAX_PIPES];
static struct ckpt_plan_file files[CKPT_PLAN_MAX_FILES];
static struct ckpt_plan_socket sockets[CKPT_PLAN_MAX_SOCKETS];
static struct ckpt_plan_shm shm[CKPT_PLAN_MAX_SHM];
static int npipes, nfiles, nsockets, nshm;
static uint64_t restart_group;
static uint32_t restart_group_size;

static int read_table(int plan_fd, void *dst, size_t elem, uint32_t n,
		      size_t off)
{
	if (n && pread(plan_fd, dst, n * elem, off) != (ssize_t)(n * elem))
		return -EIO;
	return 0;
}

/* The plan's counts, checked against the table sizes. 0 or -errno. */
static int read_plan_head(int plan_fd, struct ckpt_restart_plan *head)
{
	size_t hsize = offsetof(struct ckpt_restart_plan, procs);

	if (pread(plan_fd, head, hsize, 0) != (ssize_t)hsize)
		return -EIO;
	if (head->magic != CKPT_RESTART_PLAN_MAGIC ||
	    head->npipes > CKPT_PLAN_MAX_PIPES ||
	    head->nfiles > CKPT_PLAN_MAX_FILES ||
	    head->nsockets > CKPT_PLAN_MAX_SOCKETS ||
	    head->nshm > CKPT_PLAN_MAX_SHM)
		return -EPROTO;
	return 0;
}

/* The processes of one restart share its plan (a memfd): its inode
 * names that restart on this host, for the coordinator
 * (coordinator/restart_groups.c). */
static void note_restart_group(int plan_fd, uint32_t nprocs)
{
	struct stat st;

	if (fstat(plan_fd, &st) == 0 && nprocs <= CKPT_PLAN_MAX_PROCS) {
		restart_group = (uint64_t)st.st_ino;
		restart_group_size = nprocs;
	}
}

/* The restart this process came back from: 0 when not known. */
uint64_t handover_restart_group(uint32_t *nprocs)
{
	*nprocs = restart_group_size;
	return restart_group;
}

/* Read the plan's tables, move every handed fd with move_fd (files.c's:
 * a number no saved fd needs). 0 or -errno. */
int handover_take_plan(int plan_fd, int (*move_fd)(int))
{
	struct ckpt_restart_plan head;
	int r;

	npipes = nfiles = nsockets = nshm = 0;
	restart_group = 0;
	restart_group_size = 0;
	if (plan_fd < 0)
		return 0;
	r = read_plan_head(plan_fd, &head);
	if (r < 0)
		return r;
	note_restart_group(plan_fd, head.nprocs);
	r = read_table(plan_fd, pipes, sizeof(pipes[0]), head.npipes,
		       offsetof(struct ckpt_restart_plan, pipes));
	if (r == 0)
		r = read_table(plan_fd, files, sizeof(files[0]), head.nfiles,
			       offsetof(struct ckpt_restart_plan, files));
	if (r == 0)
		r = read_table(plan_fd, sockets, sizeof(sockets[0]),
			       head.nsockets,
			       offsetof(struct ckpt_restart_plan, sockets));
	if (r == 0)
		r = read_table(plan_fd, shm, sizeof(shm[0]), head.nshm,
			       offsetof(struct ckpt_restart_plan, shm));
	if (r < 0)
		return r;
	nshm = head.nshm;
	npipes = head.npipes;
	nfiles = head.nfiles;
	nsockets = head.nsockets;
	for (int i = 0; i < nsockets; i++)
		sockets[i].fd = move_fd(sockets[i].fd);
	for (int i = 0; i < nshm; i++)
		shm[i].fd = move_fd(shm[i].fd);
	for (int i = 0; i < npipes; i++) {
		pipes[i].read_fd = move_fd(pipes[i].read_fd);
		pipes[i].write_fd = move_fd(pipes[i].write_fd);
	}
	/* Entries of one description share the handed fd: move it once
	 * (reserved marks the entries done). */
	for (int i = 0; i < nfiles; i++)
		files[i].reserved = 0;
	for (int i = 0; i < nfiles; i++) {
		int old = files[i].handed_fd, moved;

		if (files[i].reserved)
			continue;
		moved = move_fd(old);
		for (int j = i; j < nfiles; j++)
			if (!files[j].reserved && files[j].handed_fd == old) {
				files[j].handed_fd = moved;
				files[j].reserved = 1;
			}
	}
	return 0;
}

/* The handed-over end for a saved pipe fd, or -ENOENT (not recreated). */
int handover_pipe_end(uint64_t ino, int write_end)
{
	for (int i = 0; i < npipes; i++)
		if (pipes[i].ino == ino)
			return write_end ? pipes[i].write_fd : pipes[i].read_fd;
	return -ENOENT;
}

/* The handed-over end for a saved socket, or -ENOENT. */
int handover_socket_end(uint64_t ino)
{
	for (int i = 0; i < nsockets; i++)
		if (sockets[i].ino == ino)
			return sockets[i].fd;
	return -ENOENT;
}

/* The shared description for fd of this process, or -ENOENT. */
int handover_shared_file(pid_t vpid, int fd)
{
	for (int i = 0; i < nfiles; i++)
		if (files[i].vpid == vpid && files[i].fd == fd)
			return files[i].handed_fd;
	return -ENOENT;
}

static void close_handed(int fd)
{
	if (fd < 0)
		return;
	ckpt_mark_own_fd(fd, 0);
	close(fd);
}

void handover_close_all(void)
{
	for (int i = 0; i < npipes; i++) {
		close_handed(pipes[i].read_fd);
		close_handed(pipes[i].write_fd);
	}
	for (int i = 0; i < nsockets; i++)
		close_handed(sockets[i].fd);
	for (int i = 0; i < nfiles; i++) {
		int fd = files[i].handed_fd;

		close_handed(fd);
		for (int j = i; j < nfiles; j++)
			if (files[j].handed_fd == fd)
				files[j].handed_fd = -1;
	}
	for (int i = 0; i < nshm; i++)
		close_handed(shm[i].fd);
	npipes = nfiles = nsockets = nshm = 0;
}

/* The shared memory objects of the plan, at the fds the loader kept
 * (shared_memory.c maps them before files.c moves anything). The count,
 * or -errno. */
int handover_read_shm(int plan_fd, struct ckpt_plan_shm *out, int max)
{
	struct ckpt_restart_plan head;
	int r;

	if (plan_fd < 0)
		return 0;
	r = read_plan_head(plan_fd, &head);
	if (r < 0)
		return r;
	note_restart_group(plan_fd, head.nprocs);
	if (head.nshm > (uint32_t)max)
		return -EPROTO;
	if (read_table(plan_fd, out, sizeof(out[0]), head.nshm,
		       offsetof(struct ckpt_restart_plan, shm)) < 0)
		return -EIO;
	return (int)head.nshm;
}
