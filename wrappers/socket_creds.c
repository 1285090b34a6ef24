/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Credentials received on a Unix socket (SCM_CREDENTIALS, with
 * SO_PASSCRED) name the sender by the pid the program sees: the kernel's
 * real pid is translated to the virtual one (vpid/vpid.c). A message
 * queued at a checkpoint is sent again at restart by its restored sender
 * (restart/restart_unix_dgram.c), so its pid translates the same way.
 * recvmmsg is not translated (docs/resources.md).
 */
#include <sys/socket.h>
#include "wrappers.h"

DEFINE_NEXT(recvmsg);

__attribute__((constructor)) static void resolve_socket_creds(void)
{
	RESOLVE_NEXT(recvmsg);
}

static void translate_creds(struct msghdr *msg)
{
	if (!msg->msg_control || msg->msg_controllen < sizeof(struct cmsghdr))
		return;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c;
	     c = CMSG_NXTHDR(msg, c)) {
		struct ucred uc;

		if (c->cmsg_level != SOL_SOCKET ||
		    c->cmsg_type != SCM_CREDENTIALS ||
		    c->cmsg_len < CMSG_LEN(sizeof(uc)))
			continue;
		__builtin_memcpy(&uc, CMSG_DATA(c), sizeof(uc));
		uc.pid = vpid_virt_from_real(uc.pid);
		__builtin_memcpy(CMSG_DATA(c), &uc, sizeof(uc));
	}
}

CKPT_WRAPPER ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	ssize_t n = NEXT_FN(recvmsg)(fd, msg, flags);

	if (n >= 0 && msg)
		translate_creds(msg);
	return n;
}
