/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Virtual process and thread ids. A process keeps the pid and tids it
 * had when first launched; after a restart the kernel hands out new real
 * ids and this table maps between the two. Ids never seen (threads born
 * after the last restart, processes outside the computation) map to
 * themselves. At a restart of several processes ckpt_restart hands every
 * one the map of the whole computation (include/ckpt/restart_plan.h),
 * loaded here before any thread runs; a forked child inherits it.
 * Written only while no application thread runs (start-up, restart,
 * fork child), read lock-free by the wrappers.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ckpt/restart_plan.h"
#include "../libckpt-preload/internal.h"

#define VPID_MAX 8192

struct vpid_entry {
	pid_t virt, real;
	int restored;		/* brought back by the current restart */
};

static struct vpid_entry table[VPID_MAX];
static int nentries;
static pid_t self_virt;

void vpid_init(pid_t vpid, pid_t real)
{
	nentries = 0;
	self_virt = vpid;
	vpid_map(vpid, real);
}

pid_t vpid_self(void)
{
	return self_virt;
}

static struct vpid_entry *find_virt(pid_t virt)
{
	int n = __atomic_load_n(&nentries, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (table[i].virt == virt)
			return &table[i];
	return NULL;
}

static void mark_restored(pid_t virt)
{
	struct vpid_entry *e = find_virt(virt);

	if (e)
		e->restored = 1;
}

void vpid_map(pid_t virt, pid_t real)
{
	for (int i = 0; i < nentries; i++)
		if (table[i].virt == virt) {
			table[i].real = real;
			return;
		}
	if (nentries < VPID_MAX) {
		table[nentries].virt = virt;
		table[nentries].real = real;
		table[nentries].restored = 0;
		__atomic_store_n(&nentries, nentries + 1, __ATOMIC_RELEASE);
	}
}

/* A restart begins: the table (restored with our memory) may name
 * processes that are not coming back, such as the parent outside the
 * computation that an exec mapped; only this process and the processes
 * of the restart plan are restored. */
void vpid_begin_restart(pid_t vpid, pid_t real)
{
	for (int i = 0; i < nentries; i++)
		table[i].restored = 0;
	vpid_map(vpid, real);
	mark_restored(vpid);
}

int vpid_restored(pid_t virt)
{
	struct vpid_entry *e = find_virt(virt);

	return e && e->restored;
}

pid_t vpid_virt_from_real(pid_t real)
{
	int n = __atomic_load_n(&nentries, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (table[i].real == real)
			return table[i].virt;
	return real;
}

int vpid_known(pid_t virt)
{
	int n = __atomic_load_n(&nentries, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (table[i].virt == virt)
			return 1;
	return 0;
}

int vpid_taken_by_another(pid_t real)
{
	return vpid_known(real) && vpid_real_from_virt(real) != real;
}

pid_t vpid_real_from_virt(pid_t virt)
{
	int n = __atomic_load_n(&nentries, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (table[i].virt == virt)
			return table[i].real;
	return virt;
}

/* A forked child is known by its real pid; it keeps the parent's map, so
 * it can still name the other processes of a restarted computation. */
void vpid_reset_after_fork(void)
{
	pid_t pid = syscall(SYS_getpid);

	self_virt = pid;
	vpid_map(pid, pid);
}

/* The pid map of the restart plan; 0 or -errno. No allocation: chunks of
 * the plan are read onto the stack. */
int vpid_load_plan(int plan_fd)
{
	struct ckpt_plan_proc procs[64];
	struct ckpt_restart_plan head;
	size_t hsize = offsetof(struct ckpt_restart_plan, procs);
	uint32_t n;

	if (pread(plan_fd, &head, hsize, 0) != (ssize_t)hsize)
		return -EIO;
	if (head.magic != CKPT_RESTART_PLAN_MAGIC ||
	    head.version != CKPT_RESTART_PLAN_VERSION ||
	    head.nprocs > CKPT_PLAN_MAX_PROCS)
		return -EPROTO;
	for (uint32_t done = 0; done < head.nprocs; done += n) {
		n = head.nprocs - done;
		if (n > 64)
			n = 64;
		if (pread(plan_fd, procs, n * sizeof(procs[0]),
			  hsize + done * sizeof(procs[0])) !=
		    (ssize_t)(n * sizeof(procs[0])))
			return -EIO;
		for (uint32_t i = 0; i < n; i++)
			if (procs[i].vpid > 0 && procs[i].real_pid > 0) {
				vpid_map(procs[i].vpid, procs[i].real_pid);
				mark_restored(procs[i].vpid);
			}
	}
	return 0;
}
