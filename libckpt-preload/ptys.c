/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pseudo-terminals the computation made itself (tmux, screen, script,
 * expect: posix_openpt or /dev/ptmx). Saved: a master fd is a
 * CKPT_FD_PTY_MASTER record with its number N and, as its content, a
 * struct ckpt_pty_info: the terminal settings, window size and packet
 * mode as the master reports them (they are the slave's). The slave's fds
 * stay CKPT_FD_TTY records of "/dev/pts/N".
 *
 * Restored: ckpt_restart (restart/restart_ptys.c) makes one new pty per
 * saved master, with those settings, and hands both ends over in the
 * plan's socket table (CKPT_PLAN_PTY_MASTER/SLAVE keys); files.c puts
 * them at the saved numbers. A session leader whose controlling terminal
 * was such a slave gets the new slave as its controlling terminal
 * (restart/process_tree.c). Bytes queued inside the pty at the
 * checkpoint are not kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <termios.h>
#include <unistd.h>
#include "ckpt/restart_plan.h"
#include "internal.h"

/* 1 with *index set when fd is a pty master, else 0. */
int ptys_is_master(int fd, uint32_t *index)
{
	unsigned int n;

	if (ioctl(fd, TIOCGPTN, &n) < 0)
		return 0;
	*index = n;
	return 1;
}

/* N of a slave's path "/dev/pts/N", or -1. */
static long slave_index(const char *path)
{
	char *end;
	long n;

	if (strncmp(path, "/dev/pts/", 9) || path[9] < '0' || path[9] > '9')
		return -1;
	n = strtol(path + 9, &end, 10);
	return *end || n < 0 || n > 0xffffffffL ? -1 : n;
}

/* The new slave ckpt_restart made for the saved slave at path, or
 * -ENOENT (its master was not in the computation). */
int ptys_handed_slave(const char *path)
{
	long n = slave_index(path);

	if (n < 0)
		return -ENOENT;
	return handover_socket_end(CKPT_PLAN_PTY_SLAVE(n));
}

/* The new master for a saved master of number index, or -ENOENT. */
int ptys_handed_master(uint32_t index)
{
	return handover_socket_end(CKPT_PLAN_PTY_MASTER(index));
}

static int read_info(int fd, uint32_t index, struct ckpt_pty_info *pi)
{
	struct termios t;
	struct winsize ws;
	int pkt = 0;

	memset(pi, 0, sizeof(*pi));
	pi->index = index;
	/* on a master, these report the slave's settings */
	if (ioctl(fd, TCGETS, &t) < 0 || ioctl(fd, TIOCGWINSZ, &ws) < 0)
		return -errno;
	if (ioctl(fd, TIOCGPKT, &pkt) == 0 && pkt)
		pi->flags |= CKPT_PTY_F_PACKET;
	pi->iflag = t.c_iflag;
	pi->oflag = t.c_oflag;
	pi->cflag = t.c_cflag;
	pi->lflag = t.c_lflag;
	pi->line = t.c_line;
	memcpy(pi->cc, t.c_cc, sizeof(pi->cc) < sizeof(t.c_cc) ?
	       sizeof(pi->cc) : sizeof(t.c_cc));
	pi->rows = ws.ws_row;
	pi->cols = ws.ws_col;
	pi->xpixel = ws.ws_xpixel;
	pi->ypixel = ws.ws_ypixel;
	return 0;
}

/* The struct ckpt_pty_info of master fd, in a memfd kept until the image
 * is written. The memfd, or -errno. */
int ptys_save_info(int fd, uint32_t index, uint64_t *size)
{
	struct ckpt_pty_info pi;
	int mfd, r = read_info(fd, index, &pi);

	if (r < 0)
		return r;
	mfd = memfd_create("ckpt-pty-info", MFD_CLOEXEC);
	if (mfd < 0)
		return -errno;
	if (pwrite(mfd, &pi, sizeof(pi), 0) != sizeof(pi))
		r = -EIO;
	if (r == 0)
		r = round_keep_memfd(mfd);
	if (r < 0) {
		close(mfd);
		return r;
	}
	*size = sizeof(pi);
	return mfd;
}
