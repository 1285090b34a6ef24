/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * _exit() and _Exit() skip the destructors, where exit() waits for an
 * image of this process that is being made durable (manager.c): a child
 * that ends with them right after a checkpoint resumed it would otherwise
 * leave before taking its part in the commit. They wait the same way (at
 * most 120 s), so the process reports SYNCED and renames its image
 * itself; that matters on another host, where the coordinator cannot
 * commit the image of a process that left (docs/protocol.md, Failures).
 */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "wrappers.h"

DEFINE_NEXT(_exit);
DEFINE_NEXT(_Exit);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_exit(void)
{
	RESOLVE_NEXT(_exit);
	RESOLVE_NEXT(_Exit);
}

static __attribute__((noreturn)) void exit_now(void (*next)(int), int status)
{
	manager_wait_image_settled();
	if (next)
		next(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

CKPT_WRAPPER void _exit(int status)
{
	exit_now(NEXT_FN(_exit), status);
}

CKPT_WRAPPER void _Exit(int status)
{
	exit_now(NEXT_FN(_Exit), status);
}
