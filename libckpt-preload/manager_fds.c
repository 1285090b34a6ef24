/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Descriptors the manager thread opens while the program runs: the image
 * being fsynced after the resume, its directory while the image is
 * renamed over the previous one. A fork by the program at that moment
 * copies them into the child, which then keeps its parent's image open
 * and, at its own next checkpoint, saves it as one of its files (a
 * restart then fails on it, or the child finds an fd it never opened).
 *
 * So the manager opens such a descriptor and records it, and forgets and
 * closes it, while holding a lock that fork takes too (pthread_atfork:
 * prepare takes it, the parent gives it back, the child closes every
 * descriptor its parent's manager had open and starts afresh). Only the
 * opening and closing are under the lock, never the fsync between them.
 * The threads stopped for a checkpoint never wait for it: the manager
 * takes it only after it resumed them.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include "internal.h"

#define MANAGER_FDS_MAX 4

static pthread_mutex_t manager_fds_lock = PTHREAD_MUTEX_INITIALIZER;
static int manager_fds[MANAGER_FDS_MAX] = { -1, -1, -1, -1 };

void manager_fds_hold(void)
{
	pthread_mutex_lock(&manager_fds_lock);
}

void manager_fds_release(void)
{
	pthread_mutex_unlock(&manager_fds_lock);
}

/* Under manager_fds_hold(): fd (just opened) is the manager's until
 * manager_fd_close(); the number to use is returned. A full table leaves
 * it unrecorded (never expected: at most two are open at once).
 *
 * The program runs meanwhile: it takes the lowest free numbers, dup2s
 * onto small fixed ones (a shell's `3>file`) or closes one it had closed
 * already. A descriptor of the manager's at a number the program freed a
 * moment ago could be closed or replaced under it (seen once: the
 * directory's fsync after the rename said EBADF, bash running), so it
 * moves up where libckpt's own descriptors live (ckpt_move_fd_high). */
int manager_fd_keep(int fd)
{
	if (fd < 0)
		return fd;
	fd = ckpt_move_fd_high(fd);
	for (int i = 0; i < MANAGER_FDS_MAX; i++)
		if (manager_fds[i] < 0) {
			manager_fds[i] = fd;
			ckpt_mark_own_fd(fd, 1);
			return fd;
		}
	ckpt_log("warning: more than %d descriptors of the manager open at "
		 "once; a fork now may inherit fd %d", MANAGER_FDS_MAX, fd);
	return fd;
}

static void forget(int fd)
{
	for (int i = 0; i < MANAGER_FDS_MAX; i++)
		if (manager_fds[i] == fd)
			manager_fds[i] = -1;
	ckpt_mark_own_fd(fd, 0);
}

/* Close a descriptor manager_fd_keep() recorded; returns close()'s
 * result (an fsync error may show only here). */
int manager_fd_close(int fd)
{
	int r;

	if (fd < 0)
		return 0;
	manager_fds_hold();
	forget(fd);
	r = close(fd) < 0 ? -errno : 0;
	manager_fds_release();
	return r;
}

static void before_fork(void)
{
	manager_fds_hold();
}

static void after_fork_in_parent(void)
{
	manager_fds_release();
}

/* The parent's manager thread does not exist here: what it had open
 * is not the child's. Called by manager.c's handler before it starts the
 * child's manager thread, which may take the lock at once. */
void manager_fds_after_fork_in_child(void)
{
	for (int i = 0; i < MANAGER_FDS_MAX; i++)
		if (manager_fds[i] >= 0) {
			ckpt_mark_own_fd(manager_fds[i], 0);
			close(manager_fds[i]);
			manager_fds[i] = -1;
		}
	pthread_mutex_init(&manager_fds_lock, NULL);
}

void manager_fds_init(void)
{
	pthread_atfork(before_fork, after_fork_in_parent, NULL);
}
