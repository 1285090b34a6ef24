/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SO_PEERCRED across a restart. The kernel stamps a Unix socket's peer
 * credentials when it is connected (or made by socketpair); at restart
 * ckpt_restart makes the connections again, so the kernel would name
 * ckpt_restart. At each checkpoint the credentials of every Unix socket
 * are kept here (part of the saved memory), the pid made virtual; after a
 * restart each entry is tied to the socket now at its fd, and
 * getsockopt(SO_PEERCRED) on it (wrappers/socket_creds.c) answers with
 * them. A socket made after the restart is answered by the kernel,
 * translated.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

#define PEER_CREDS_MAX 1024

struct peer_creds {
	int fd;
	uint64_t ino;		/* the socket's inode now */
	struct ucred creds;	/* pid virtual */
};

static struct peer_creds table[PEER_CREDS_MAX];
static int nentries;
static struct peer_creds before[PEER_CREDS_MAX];	/* last checkpoint's */
static int nbefore;

static int socket_inode(int fd, uint64_t *ino)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
		return -1;
	*ino = st.st_ino;
	return 0;
}

/* Raw calls: the getsockopt symbol is the program's wrapper. */
static int unix_peer_creds(int fd, struct ucred *uc)
{
	socklen_t len = sizeof(int);
	int domain;

	if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_DOMAIN, &domain,
		    &len) < 0 || domain != AF_UNIX)
		return -1;
	len = sizeof(*uc);
	if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PEERCRED, uc,
		    &len) < 0 || uc->pid <= 0)
		return -1;
	uc->pid = vpid_virt_from_real(uc->pid);
	return 0;
}

static int find_creds(const struct peer_creds *t, int n, int fd,
		      uint64_t ino, struct ucred *uc)
{
	for (int i = 0; i < n; i++)
		if (t[i].fd == fd && t[i].ino == ino) {
			*uc = t[i].creds;
			return 0;
		}
	return -1;
}

static void note_socket(int fd)
{
	struct peer_creds *e = &table[nentries];

	/* files.c knows its TCP and UDP sockets: thousands, no Unix ones */
	if (files_saved_inet_socket(fd) || socket_inode(fd, &e->ino) < 0)
		return;
	/* saved at the last checkpoint: keep what it said then (since a
	 * restart the kernel names ckpt_restart) */
	if (find_creds(before, nbefore, fd, e->ino, &e->creds) &&
	    unix_peer_creds(fd, &e->creds))
		return;
	e->fd = fd;
	nentries++;
}

static int peer_creds_save(void)
{
	struct ckpt_dir_iter it;
	int fd, r;

	memcpy(before, table, nentries * sizeof(table[0]));
	nbefore = nentries;
	nentries = 0;
	r = ckpt_dir_open(&it, "/proc/self/fd");
	if (r < 0)
		return r;
	while (nentries < PEER_CREDS_MAX &&
	       (fd = ckpt_dir_next_number(&it)) >= 0)
		if (fd != it.fd && !ckpt_is_own_fd(fd))
			note_socket(fd);
	ckpt_dir_close(&it);
	return 0;
}

/* Every fd is at its number again: tie each entry to the new socket. */
static int peer_creds_restore(const struct ckpt_restart_args *args)
{
	(void)args;
	for (int i = 0; i < nentries; i++)
		if (socket_inode(table[i].fd, &table[i].ino) < 0)
			table[i].ino = 0;
	return 0;
}

/* The credentials saved for the socket at fd, if it is one saved at the
 * last checkpoint: 0 and *uc, else -1. */
int peer_creds_saved(int fd, struct ucred *uc)
{
	uint64_t ino;

	if (socket_inode(fd, &ino) < 0)
		return -1;
	return find_creds(table, nentries, fd, ino, uc);
}

const struct ckpt_resource_ops peer_creds_resource_ops = {
	.name = "peer credentials",
	.save = peer_creds_save,
	.restore = peer_creds_restore,
};
