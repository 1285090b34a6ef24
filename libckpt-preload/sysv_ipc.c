/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SysV message queues and semaphore sets (msgget, semget): not saved.
 * They live in the kernel under an id, not in an fd, and outlive the
 * processes that use them: a restart finds whatever the killed processes
 * left there (other messages, other semaphore values), or nothing. What
 * this file does is say so at the checkpoint, like every kind a restart
 * does not bring back (unrestored.c): wrappers/sysv_ipc.c notes each id
 * msgget/semget returns; at the checkpoint each one that still exists is
 * named. The table is the process's memory: a forked child inherits it,
 * an exec loses it.
 */
#include <errno.h>
#include <sched.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include "internal.h"

#define SYSV_IPC_MAX	64
#define LOCK_TRIES	1000

static struct sysv_ipc_object {
	int kind;		/* SYSV_IPC_MSG or SYSV_IPC_SEM */
	int id;
	key_t key;
} objects[SYSV_IPC_MAX];
static int nobjects, table_lock, told_full;

/* Note an id msgget or semget returned (any thread, any time). The lock
 * is tried a bounded number of times: a child forked while another
 * thread held it inherits it held, and then notes nothing. */
void sysv_ipc_note(int kind, int id, key_t key)
{
	int tries = 0;

	while (__atomic_exchange_n(&table_lock, 1, __ATOMIC_ACQUIRE)) {
		if (++tries == LOCK_TRIES)
			return;
		sched_yield();
	}
	for (int i = 0; i < nobjects; i++)
		if (objects[i].kind == kind && objects[i].id == id)
			goto out;
	if (nobjects < SYSV_IPC_MAX)
		objects[nobjects++] = (struct sysv_ipc_object){ kind, id, key };
	else
		told_full = 1;
out:
	__atomic_store_n(&table_lock, 0, __ATOMIC_RELEASE);
}

static int still_there(const struct sysv_ipc_object *o)
{
	if (o->kind == SYSV_IPC_MSG) {
		struct msqid_ds ds;

		return msgctl(o->id, IPC_STAT, &ds) == 0;
	}
	struct semid_ds ds;

	return semctl(o->id, 0, IPC_STAT, &ds) == 0;
}

/* Threads are stopped: name every object still there. */
static int sysv_ipc_save(void)
{
	for (int i = 0; i < nobjects; i++) {
		const struct sysv_ipc_object *o = &objects[i];

		if (!still_there(o))
			continue;
		unrestored_add("a SysV %s (%s, id %d, key %#x): not saved; a "
			       "restart finds it as the killed processes left "
			       "it, if it is still there",
			       o->kind == SYSV_IPC_MSG ? "message queue" :
							 "semaphore set",
			       o->kind == SYSV_IPC_MSG ? "msgget" : "semget",
			       o->id, (unsigned)o->key);
	}
	if (told_full)
		unrestored_add("more than %d SysV message queues and "
			       "semaphore sets: those after the first %d are "
			       "not named here", SYSV_IPC_MAX, SYSV_IPC_MAX);
	return 0;
}

const struct ckpt_resource_ops sysv_ipc_resource_ops = {
	.name = "SysV message queues and semaphores",
	.save = sysv_ipc_save,
};
