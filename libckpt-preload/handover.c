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
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* Entries of one description share the handed fd: move it once. */
static void move_shared_files(int (*move_fd)(int))
{
	static uint8_t moved_already[CKPT_PLAN_MAX_FILES];

	memset(moved_already, 0, sizeof(moved_already));
	for (int i = 0; i < nfiles; i++) {
		int old = files[i].handed_fd, moved;

		if (moved_already[i])
			continue;
		moved = move_fd(old);
		for (int j = i; j < nfiles; j++)
			if (!moved_already[j] && files[j].handed_fd == old) {
				files[j].handed_fd = moved;
				moved_already[j] = 1;
			}
	}
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
	if (r == 0)
		r = host_moves_take(plan_fd);
	if (r == 0)
		r = tcp_rest_take(plan_fd, move_fd);
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
	move_shared_files(move_fd);
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

static int file_entry(pid_t vpid, int fd)
{
	for (int i = 0; i < nfiles; i++)
		if (files[i].vpid == vpid && files[i].fd == fd)
			return i;
	return -1;
}

/* 1 if this process puts the saved state into the shared event fd it
 * had at fd (the others wait for it: handover_wait_state). */
int handover_sets_state(pid_t vpid, int fd)
{
	int i = file_entry(vpid, fd);

	return i >= 0 && (files[i].flags & CKPT_PLAN_FILE_SETS_STATE);
}

static size_t flags_offset(int i)
{
	return offsetof(struct ckpt_restart_plan, files) +
	       i * sizeof(files[0]) + offsetof(struct ckpt_plan_file, flags);
}

/* Tell the other holders of the shared event fd at fd that its state is
 * in (the plan is a memfd every restored process of this restart has). */
void handover_state_set(int plan_fd, pid_t vpid, int fd)
{
	int i = file_entry(vpid, fd);
	uint32_t flags;

	if (i < 0)
		return;
	flags = files[i].flags | CKPT_PLAN_FILE_STATE_SET;
	if (pwrite(plan_fd, &flags, sizeof(flags), flags_offset(i)) !=
	    sizeof(flags))
		ckpt_log("fd %d: cannot tell the restart plan that its state "
			 "is restored: %s", fd, strerror(errno));
}

/* Wait (timeout_ms at most) until the process that puts the state into
 * the shared event fd at fd has done so: the program must not run on an
 * empty counter or interest list. 0, or -ETIMEDOUT. */
int handover_wait_state(int plan_fd, pid_t vpid, int fd, int timeout_ms)
{
	int i = file_entry(vpid, fd), lead = -1;
	struct timespec nap = { 0, 1000000 };
	uint32_t flags;

	for (int j = 0; i >= 0 && j < nfiles && lead < 0; j++)
		if (files[j].handed_fd == files[i].handed_fd &&
		    (files[j].flags & CKPT_PLAN_FILE_SETS_STATE))
			lead = j;
	if (lead < 0 || lead == i)
		return 0;
	for (int waited = 0; waited < timeout_ms; waited++) {
		if (pread(plan_fd, &flags, sizeof(flags), flags_offset(lead)) ==
		    sizeof(flags) && (flags & CKPT_PLAN_FILE_STATE_SET))
			return 0;
		nanosleep(&nap, NULL);
	}
	return -ETIMEDOUT;
}

static void close_handed(int fd)
{
	if (fd < 0)
		return;
	ckpt_mark_own_fd(fd, 0);
	close(fd);
}

/* Every handed fd (one shared by several entries more than once). */
static void for_each_handed(void (*fn)(int fd))
{
	for (int i = 0; i < npipes; i++) {
		fn(pipes[i].read_fd);
		fn(pipes[i].write_fd);
	}
	for (int i = 0; i < nsockets; i++)
		fn(sockets[i].fd);
	for (int i = 0; i < nfiles; i++)
		fn(files[i].handed_fd);
	for (int i = 0; i < nshm; i++)
		fn(shm[i].fd);
}

#define RANGE_MAX 65536
static uint8_t in_range[RANGE_MAX / 8];	/* bit fd - range_lo: handed */
static int range_lo, range_hi, range_count;

static void note_range_end(int fd)
{
	if (fd < 0)
		return;
	if (fd < range_lo)
		range_lo = fd;
	if (fd > range_hi)
		range_hi = fd;
}

static void count_in_range(int fd)
{
	int bit;

	if (fd < 0)
		return;
	bit = fd - range_lo;
	if (!(in_range[bit / 8] >> (bit % 8) & 1))
		range_count++;
	in_range[bit / 8] |= 1 << (bit % 8);
}

static void forget_own(int fd)
{
	ckpt_mark_own_fd(fd, 0);
}

/* When the handed fds fill a range exactly, as ckpt_restart hands them
 * (restart/process_tree.c), close them with one close_range instead of
 * a close each (thousands for a program with many connections). 1 if
 * done. */
static int close_handed_range(void)
{
	range_lo = RANGE_MAX;
	range_hi = -1;
	range_count = 0;
	for_each_handed(note_range_end);
	if (range_hi < 0 || range_hi - range_lo >= RANGE_MAX)
		return 0;
	memset(in_range, 0, (range_hi - range_lo) / 8 + 1);
	for_each_handed(count_in_range);
	if (range_count != range_hi - range_lo + 1 ||
	    syscall(SYS_close_range, range_lo, range_hi, 0) < 0)
		return 0;
	for_each_handed(forget_own);
	return 1;
}

void handover_close_all(void)
{
	if (close_handed_range()) {
		npipes = nfiles = nsockets = nshm = 0;
		return;
	}
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
