/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * setsockopt: the multicast groups a socket joins and leaves are noted
 * (libckpt-preload/multicast.c) so a restart joins them again; the kernel
 * cannot list them. The call and the note happen with the checkpoint
 * signal blocked: no checkpoint falls between them. Other options go
 * straight through.
 */
#include <sys/socket.h>
#include "wrappers.h"

DEFINE_NEXT(setsockopt);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_socket(void)
{
	RESOLVE_NEXT(setsockopt);
}

static int set_and_note(int fd, int level, int name, const void *val,
			socklen_t len)
{
	int r = NEXT_FN(setsockopt)(fd, level, name, val, len);

	if (r == 0)
		multicast_note(fd, level, name, val, len);
	return r;
}

CKPT_WRAPPER int setsockopt(int fd, int level, int name, const void *val,
			    socklen_t len)
{
	if (!multicast_is_membership(level, name))
		return NEXT_FN(setsockopt)(fd, level, name, val, len);
	return WITHOUT_CHECKPOINT(set_and_note(fd, level, name, val, len));
}
