/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The restart barrier: no process of one ckpt_restart runs its program
 * before every process of that restart has put its resources back
 * (sessions, process groups, fds, shared memory, threads). Without it a
 * program sees another one half restored: a parent asks for the process
 * group of a child that has not made it yet, or signals a group that
 * does not exist. Each process marks its entry of the restart plan
 * (ckpt_plan_proc.state, include/ckpt/restart_plan.h) and waits, bounded,
 * for every other entry's mark; a process whose restore failed marks
 * FAILED and is not waited for. Processes restarted by another
 * ckpt_restart (another host) have their own plan and barrier.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/restart_plan.h"
#include "internal.h"
#include "../protocol/client_internal.h"

#define BARRIER_WAIT_MS	30000
#define CHUNK		64

static int plan_fd = -1;
static uint32_t nprocs;
static int self = -1;		/* this process's entry */

static size_t entry_offset(uint32_t i)
{
	return offsetof(struct ckpt_restart_plan, procs) +
	       i * sizeof(struct ckpt_plan_proc);
}

/* The first entry from `from` on for which found() is true: its index,
 * nprocs if none is, -1 if the plan cannot be read. */
static int find_entry(int fd, uint32_t from,
		      int (*found)(const struct ckpt_plan_proc *p, pid_t vpid),
		      pid_t vpid)
{
	struct ckpt_plan_proc procs[CHUNK];
	uint32_t n;

	for (uint32_t done = from; done < nprocs; done += n) {
		n = nprocs - done < CHUNK ? nprocs - done : CHUNK;
		if (pread(fd, procs, n * sizeof(procs[0]),
			  entry_offset(done)) != (ssize_t)(n * sizeof(procs[0])))
			return -1;
		for (uint32_t i = 0; i < n; i++)
			if (found(&procs[i], vpid))
				return (int)(done + i);
	}
	return (int)nprocs;
}

static int is_process(const struct ckpt_plan_proc *p, pid_t vpid)
{
	return p->vpid == vpid;
}

/* Marks are only ever added: a search for the first entry without one
 * goes on from where the last one stopped. */
static int is_unmarked(const struct ckpt_plan_proc *p, pid_t vpid)
{
	(void)vpid;
	return !__atomic_load_n(&p->state, __ATOMIC_RELAXED);
}

/* Keep a descriptor of the plan past the restore of the fds and find
 * this process's entry. Without a plan (an older loader) there is no
 * barrier. */
void restart_barrier_open(int fd, pid_t vpid)
{
	struct ckpt_restart_plan head;
	size_t hsize = offsetof(struct ckpt_restart_plan, procs);

	self = -1;
	plan_fd = -1;
	if (fd < 0 || pread(fd, &head, hsize, 0) != (ssize_t)hsize ||
	    head.magic != CKPT_RESTART_PLAN_MAGIC ||
	    head.nprocs > CKPT_PLAN_MAX_PROCS)
		return;
	nprocs = head.nprocs;
	self = find_entry(fd, 0, is_process, vpid);
	if (self >= (int)nprocs)
		self = -1;
	if (self >= 0)
		plan_fd = files_private_fd(fcntl(fd, F_DUPFD_CLOEXEC, 3));
}

static void mark(uint32_t state)
{
	size_t off = entry_offset((uint32_t)self) +
		     offsetof(struct ckpt_plan_proc, state);

	if (pwrite(plan_fd, &state, sizeof(state), off) != sizeof(state))
		ckpt_log("cannot mark the restart plan: %s", strerror(errno));
}

static void close_plan(void)
{
	ckpt_mark_own_fd(plan_fd, 0);
	close(plan_fd);
	plan_fd = -1;
}

/* This process will not come: the others do not wait for it. */
void restart_barrier_fail(void)
{
	if (plan_fd < 0)
		return;
	mark(CKPT_PLAN_PROC_FAILED);
	close_plan();
}

static void note_late(int first)
{
	struct ckpt_plan_proc p;

	if (pread(plan_fd, &p, sizeof(p), entry_offset((uint32_t)first)) !=
	    sizeof(p))
		p.vpid = 0;
	ckpt_log("process %d of this restart has not finished restoring "
		 "within %d s; going on without waiting for it", (int)p.vpid,
		 BARRIER_WAIT_MS / 1000);
}

/* Say this process is restored, then wait (bounded) until every process
 * of the restart is. A 1 ms nap while waiting: a restart is over in
 * milliseconds, and the plan is a plain memfd read with pread. */
void restart_barrier_wait(void)
{
	struct timespec nap = { 0, 1000000 };
	int64_t deadline;
	int first = 0;

	if (plan_fd < 0)
		return;
	mark(CKPT_PLAN_PROC_RESTORED);
	deadline = ckpt_cc_now_ms() + BARRIER_WAIT_MS;
	while ((first = find_entry(plan_fd, (uint32_t)first, is_unmarked,
				   0)) >= 0 && first < (int)nprocs) {
		if (ckpt_cc_now_ms() > deadline) {
			note_late(first);
			break;
		}
		nanosleep(&nap, NULL);
	}
	close_plan();
}
