/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Virtual process and thread ids. A process keeps the pid and tids it
 * had when first launched; after a restart the kernel hands out new real
 * ids and this table maps between the two. Ids never seen (threads born
 * after the last restart, processes outside the computation) map to
 * themselves. At a restart the table starts again from the pid map of
 * the whole computation that ckpt_restart hands every process
 * (include/ckpt/restart_plan.h), loaded before any thread runs: what the
 * previous run knew names processes that are gone. A forked child
 * inherits the table; a program started by exec or posix_spawn gets its
 * translated entries in CKPT_VPIDS (wrappers/exec.c). A new child's real
 * pid was free, so an entry that still names it is stale and goes.
 * Each entry is one 64-bit word (0: free), read and written atomically:
 * wrappers of several threads (and vfork children) use it at once.
 * The table of the run before the last restart is kept, for a real pid
 * the kernel gave back just before the checkpoint and that is translated
 * only after the restart (vpid_virt_from_real_since).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ckpt/restart_plan.h"
#include "../libckpt-preload/internal.h"

#define VPID_MAX 8192

static uint64_t table[VPID_MAX];
static int used;		/* entries at or above are all free */
static pid_t self_virt, self_real;
static uint64_t before_restart[VPID_MAX];
static int before_used;
static unsigned epoch;		/* restarts of this process */

static uint64_t entry(pid_t virt, pid_t real)
{
	return (uint64_t)(uint32_t)virt << 32 | (uint32_t)real;
}

static pid_t entry_virt(uint64_t e)
{
	return (pid_t)(e >> 32);
}

static pid_t entry_real(uint64_t e)
{
	return (pid_t)(uint32_t)e;
}

static uint64_t load_entry(int i)
{
	return __atomic_load_n(&table[i], __ATOMIC_ACQUIRE);
}

static int entries_in_use(void)
{
	return __atomic_load_n(&used, __ATOMIC_ACQUIRE);
}

static void clear_table(void)
{
	for (int i = 0; i < used; i++)
		table[i] = 0;
	used = 0;
}

/* The process is `vpid`, really `real`, and knows no other: at start-up
 * and at a restart, before any other thread runs. */
void vpid_init(pid_t vpid, pid_t real)
{
	memcpy(before_restart, table, used * sizeof(table[0]));
	before_used = used;
	clear_table();
	__atomic_add_fetch(&epoch, 1, __ATOMIC_ACQ_REL);
	self_virt = vpid;
	self_real = real;
	vpid_map(vpid, real);
}

pid_t vpid_self(void)
{
	return self_virt;
}

/* getpid(): a vfork (or CLONE_VM) child runs on its parent's memory and
 * so on its identity; it is a new process known by its own real pid. */
pid_t vpid_getpid(void)
{
	pid_t real = syscall(SYS_getpid);

	return real == self_real ? self_virt : real;
}

static void raise_used(int upto)
{
	int u = entries_in_use();

	while (u < upto && !__atomic_compare_exchange_n(&used, &u, upto, 0,
			__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

static int add_entry(uint64_t e)
{
	for (int i = 0; i < VPID_MAX; i++) {
		uint64_t free_slot = 0;

		if (__atomic_compare_exchange_n(&table[i], &free_slot, e, 0,
				__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			raise_used(i + 1);
			return 0;
		}
	}
	return -ENOSPC;
}

void vpid_map(pid_t virt, pid_t real)
{
	int n = entries_in_use();

	for (int i = 0; i < n; i++) {
		uint64_t e = load_entry(i);

		if (e && entry_virt(e) == virt &&
		    __atomic_compare_exchange_n(&table[i], &e,
				entry(virt, real), 0, __ATOMIC_ACQ_REL,
				__ATOMIC_ACQUIRE))
			return;
	}
	if (add_entry(entry(virt, real)) < 0)
		ckpt_log("more than %d process and thread ids to translate; "
			 "%d is not translated any more", VPID_MAX, (int)virt);
}

/* The kernel just gave `real` to a new child: whatever had it is gone. */
void vpid_forget_real(pid_t real)
{
	int n = entries_in_use();

	for (int i = 0; i < n; i++) {
		uint64_t e = load_entry(i);

		if (e && entry_real(e) == real && entry_virt(e) != real)
			__atomic_compare_exchange_n(&table[i], &e, 0, 0,
				__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
}

/* Changes at every restart: a wrapper that translated an id before the
 * restart must not use the translation after it. */
unsigned vpid_epoch(void)
{
	return __atomic_load_n(&epoch, __ATOMIC_ACQUIRE);
}

/* A real pid the kernel returned to a call that began in epoch `then`:
 * when the process was restarted meanwhile and the pid names none of
 * this run, it is one of the run before (the call returned, then the
 * checkpoint came). */
pid_t vpid_virt_from_real_since(pid_t real, unsigned then)
{
	pid_t v = vpid_virt_from_real(real);

	if (then == vpid_epoch() || v != real || vpid_known(real))
		return v;
	for (int i = 0; i < before_used; i++)
		if (before_restart[i] && entry_real(before_restart[i]) == real)
			return entry_virt(before_restart[i]);
	return real;
}

pid_t vpid_virt_from_real(pid_t real)
{
	int n = entries_in_use();

	for (int i = 0; i < n; i++) {
		uint64_t e = load_entry(i);

		if (e && entry_real(e) == real)
			return entry_virt(e);
	}
	return real;
}

static int find_virt(pid_t virt, pid_t *real)
{
	int n = entries_in_use();

	for (int i = 0; i < n; i++) {
		uint64_t e = load_entry(i);

		if (e && entry_virt(e) == virt) {
			*real = entry_real(e);
			return 1;
		}
	}
	return 0;
}

int vpid_known(pid_t virt)
{
	pid_t real;

	return find_virt(virt, &real);
}

int vpid_taken_by_another(pid_t real)
{
	pid_t other;

	return find_virt(real, &other) && other != real;
}

pid_t vpid_real_from_virt(pid_t virt)
{
	pid_t real;

	return find_virt(virt, &real) ? real : virt;
}

/* A forked child is known by its real pid; it keeps the parent's map, so
 * it can still name the other processes of a restarted computation. */
void vpid_reset_after_fork(void)
{
	pid_t pid = syscall(SYS_getpid);

	self_virt = pid;
	self_real = pid;
	vpid_forget_real(pid);
	vpid_map(pid, pid);
}

/* A thread of this process (or, in a vfork child, of its parent): its
 * id means nothing to a program started by exec. */
static int own_thread(pid_t real)
{
	return syscall(SYS_tgkill, self_real, real, 0) == 0;
}

/* The entries an exec'd or spawned program needs: "v:r,v:r..." of every
 * process whose virtual pid is not its real one, but this process
 * itself (CKPT_VPID says it). How many bytes they need, with the NUL,
 * at most `len` written (truncated at an entry). */
size_t vpid_format_translated(char *buf, size_t len)
{
	int n = entries_in_use();
	size_t at = 0, need = 1;

	if (len)
		buf[0] = 0;
	for (int i = 0; i < n; i++) {
		uint64_t e = load_entry(i);
		pid_t v = entry_virt(e), r = entry_real(e);
		char one[32];
		int k;

		if (!e || v == r || v == self_virt || own_thread(r))
			continue;
		ckpt_fmt(one, sizeof(one), "%s%d:%d", need > 1 ? "," : "",
			 (int)v, (int)r);
		k = (int)strlen(one);
		need += k;
		if (at + k < len) {
			memcpy(buf + at, one, k + 1);
			at += k;
		}
	}
	return need;
}

/* The entries of CKPT_VPIDS, as vpid_format_translated wrote them. */
void vpid_load_translated(const char *s)
{
	while (s && *s) {
		char *end;
		long v = strtol(s, &end, 10), r;

		if (*end != ':')
			return;
		r = strtol(end + 1, &end, 10);
		if (v > 0 && r > 0)
			vpid_map((pid_t)v, (pid_t)r);
		s = *end == ',' ? end + 1 : end;
		if (*end != ',')
			return;
	}
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
			if (procs[i].vpid > 0 && procs[i].real_pid > 0)
				vpid_map(procs[i].vpid, procs[i].real_pid);
	}
	return 0;
}

/* Known in the run before the last restart: the pid table restored with
 * the memory named it (a parent outside the computation that an exec
 * mapped, a process whose image was not given). */
int vpid_known_before_restart(pid_t virt)
{
	for (int i = 0; i < before_used; i++)
		if (before_restart[i] && entry_virt(before_restart[i]) == virt)
			return 1;
	return 0;
}
