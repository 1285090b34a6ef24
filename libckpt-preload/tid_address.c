/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a thread's clear-child-tid word is: the tid glibc caches in the
 * thread descriptor (struct pthread), which the kernel zeroes and wakes
 * at the thread's exit, and pthread_join waits on. A restart must give
 * it back to the recreated thread (CLONE_CHILD_CLEARTID), or a join of
 * that thread never returns.
 *
 * PR_GET_TID_ADDRESS tells, on a kernel built with
 * CONFIG_CHECKPOINT_RESTORE. Without it, and under qemu-user (which keeps
 * the address to itself and does not emulate the prctl), the offset
 * glibc publishes for libthread_db (_thread_db_pthread_tid: bits, count,
 * offset of the tid in struct pthread) finds it, when that word holds
 * the thread's own tid (a thread created by a raw clone shares its
 * creator's descriptor, and has no such word).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/prctl.h>
#include "internal.h"

static long tid_field_offset = -1;

/* At start-up (dlsym is no call for the checkpoint signal's handler). */
void tid_address_init(void)
{
	const uint32_t *field = dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid");

	if (field && field[0] == 8 * sizeof(pid_t) && field[1] == 1)
		tid_field_offset = field[2];
}

/* This thread's clear-child-tid address, or NULL when it has none. */
pid_t *tid_address_of_self(void)
{
	pid_t *addr = NULL;

	if (prctl(PR_GET_TID_ADDRESS, &addr, 0, 0, 0) == 0)
		return addr;
	if (tid_field_offset < 0)
		return NULL;
	addr = (pid_t *)((char *)pthread_self() + tid_field_offset);
	return *addr == ckpt_real_gettid() ? addr : NULL;
}
