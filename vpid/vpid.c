/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Virtual process and thread ids. A process keeps the pid and tids it
 * had when first launched; after a restart the kernel hands out new real
 * ids and this table maps between the two. Ids never seen (threads born
 * after the last restart, other processes) map to themselves.
 * Written only while no application thread runs (start-up, restart,
 * fork child), read lock-free by the wrappers.
 */
#include <sys/syscall.h>
#include <unistd.h>
#include "../libckpt-preload/internal.h"

#define VPID_MAX 8192

struct vpid_entry {
	pid_t virt, real;
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
		__atomic_store_n(&nentries, nentries + 1, __ATOMIC_RELEASE);
	}
}

pid_t vpid_virt_from_real(pid_t real)
{
	int n = __atomic_load_n(&nentries, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (table[i].real == real)
			return table[i].virt;
	return real;
}

pid_t vpid_real_from_virt(pid_t virt)
{
	int n = __atomic_load_n(&nentries, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (table[i].virt == virt)
			return table[i].real;
	return virt;
}

/* A forked child starts a fresh table under its own (real) pid. */
void vpid_reset_after_fork(void)
{
	pid_t pid = syscall(SYS_getpid);

	vpid_init(pid, pid);
}
