/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * msgget and semget: the ids they return are noted so that a checkpoint
 * can name the objects it does not save (libckpt-preload/sysv_ipc.c).
 */
#include <sys/msg.h>
#include <sys/sem.h>
#include "wrappers.h"

DEFINE_NEXT(msgget);
DEFINE_NEXT(semget);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_sysv_ipc(void)
{
	RESOLVE_NEXT(msgget);
	RESOLVE_NEXT(semget);
}

CKPT_WRAPPER int msgget(key_t key, int flags)
{
	int id = NEXT_FN(msgget)(key, flags);

	if (id >= 0)
		sysv_ipc_note(SYSV_IPC_MSG, id, key);
	return id;
}

CKPT_WRAPPER int semget(key_t key, int nsems, int flags)
{
	int id = NEXT_FN(semget)(key, nsems, flags);

	if (id >= 0)
		sysv_ipc_note(SYSV_IPC_SEM, id, key);
	return id;
}
