/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pids the kernel writes about a Unix socket's peer name it by the pid
 * the program sees: the real pid is translated to the virtual one
 * (vpid/vpid.c).
 * - Credentials received with SO_PASSCRED (SCM_CREDENTIALS), by recvmsg
 *   and recvmmsg. A message queued at a checkpoint is sent again at
 *   restart by its restored sender (restart/restart_unix_dgram.c), so its
 *   pid translates the same way.
 * - SO_PEERCRED: the kernel keeps the credentials of whoever connected
 *   (or made the pair), which after a restart is ckpt_restart: a socket
 *   saved at the checkpoint answers with what it answered then
 *   (libckpt-preload/peer_creds.c).
 */
#include <sys/socket.h>
#include "wrappers.h"

DEFINE_NEXT(recvmsg);
DEFINE_NEXT(recvmmsg);
DEFINE_NEXT(getsockopt);

__attribute__((constructor)) static void resolve_socket_creds(void)
{
	RESOLVE_NEXT(recvmsg);
	RESOLVE_NEXT(recvmmsg);
	RESOLVE_NEXT(getsockopt);
}

static void translate_creds(struct msghdr *msg, unsigned then)
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
		uc.pid = vpid_virt_from_real_since(uc.pid, then);
		__builtin_memcpy(CMSG_DATA(c), &uc, sizeof(uc));
	}
}

CKPT_WRAPPER ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	unsigned then = vpid_epoch();
	ssize_t n = NEXT_FN(recvmsg)(fd, msg, flags);

	if (n >= 0 && msg)
		translate_creds(msg, then);
	if (n >= 0 && msg && host_moves_any())	/* socket_addresses.c */
		host_moves_unapply(msg->msg_name, msg->msg_namelen);
	return n;
}

CKPT_WRAPPER int recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen,
			  int flags, struct timespec *timeout)
{
	unsigned then = vpid_epoch();
	int n = NEXT_FN(recvmmsg)(fd, vec, vlen, flags, timeout);

	for (int i = 0; vec && i < n; i++) {
		translate_creds(&vec[i].msg_hdr, then);
		if (host_moves_any())
			host_moves_unapply(vec[i].msg_hdr.msg_name,
					   vec[i].msg_hdr.msg_namelen);
	}
	return n;
}

static int peer_creds(int fd, void *val, socklen_t *len)
{
	struct ucred uc;
	int r = NEXT_FN(getsockopt)(fd, SOL_SOCKET, SO_PEERCRED, val, len);

	if (r < 0 || !val || !len || *len < sizeof(uc))
		return r;
	if (peer_creds_saved(fd, &uc) == 0)
		__builtin_memcpy(val, &uc, sizeof(uc));
	else {
		__builtin_memcpy(&uc, val, sizeof(uc));
		uc.pid = vpid_virt_from_real(uc.pid);
		__builtin_memcpy(val, &uc, sizeof(uc));
	}
	return r;
}

CKPT_WRAPPER int getsockopt(int fd, int level, int name, void *val,
			    socklen_t *len)
{
	if (level != SOL_SOCKET || name != SO_PEERCRED)
		return NEXT_FN(getsockopt)(fd, level, name, val, len);
	return WITHOUT_CHECKPOINT(peer_creds(fd, val, len));
}
