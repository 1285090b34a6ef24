// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pseudo-terminals a computation made itself (tmux, screen, script):
 * one new pty per saved master (CKPT_FD_PTY_MASTER, by its number N),
 * made by ckpt_restart before it forks the process tree, with the saved
 * terminal settings, window size and packet mode. Both ends go into the
 * plan's socket table (CKPT_PLAN_PTY_MASTER/SLAVE of N); libckpt
 * (libckpt-preload/ptys.c) puts the master where the master was and the
 * slave where each "/dev/pts/N" was, and process_tree.c makes the slave
 * the controlling terminal of the session that had it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include "process_tree.h"

static int read_info(const struct ckpt_image *img,
		     const struct ckpt_fd_info *f, struct ckpt_pty_info *pi)
{
	if (f->data_size != sizeof(*pi) ||
	    pread(img->fd, pi, sizeof(*pi), f->data_offset) != sizeof(*pi))
		return -EIO;
	return pi->index == f->pty_index ? 0 : -EINVAL;
}

static void to_termios(const struct ckpt_pty_info *pi, struct termios *t)
{
	memset(t, 0, sizeof(*t));
	t->c_iflag = pi->iflag;
	t->c_oflag = pi->oflag;
	t->c_cflag = pi->cflag;
	t->c_lflag = pi->lflag;
	t->c_line = pi->line;
	memcpy(t->c_cc, pi->cc, sizeof(t->c_cc) < sizeof(pi->cc) ?
	       sizeof(t->c_cc) : sizeof(pi->cc));
	cfsetispeed(t, pi->cflag & CBAUD);
	cfsetospeed(t, pi->cflag & CBAUD);
}

/* The saved settings on the new pair (master, slave). */
static int set_up(const struct ckpt_pty_info *pi, int master, int slave)
{
	struct winsize ws = {
		.ws_row = pi->rows, .ws_col = pi->cols,
		.ws_xpixel = pi->xpixel, .ws_ypixel = pi->ypixel,
	};
	int pkt = !!(pi->flags & CKPT_PTY_F_PACKET);
	struct termios t;

	to_termios(pi, &t);
	if (tcsetattr(slave, TCSANOW, &t) < 0 ||
	    ioctl(master, TIOCSWINSZ, &ws) < 0 ||
	    (pkt && ioctl(master, TIOCPKT, &pkt) < 0))
		return -errno;
	return 0;
}

/* A new pty: master and slave at *next_fd and *next_fd + 1. */
static int make_pty(const struct ckpt_pty_info *pi, int *next_fd)
{
	int fds[2] = { -1, -1 }, r = 0;
	char *name;

	fds[0] = posix_openpt(O_RDWR | O_NOCTTY);
	if (fds[0] < 0)
		return -errno;
	name = grantpt(fds[0]) == 0 && unlockpt(fds[0]) == 0 ?
	       ptsname(fds[0]) : NULL;
	if (name)
		fds[1] = open(name, O_RDWR | O_NOCTTY);
	if (fds[1] < 0) {
		r = -errno;
		close(fds[0]);
		return r;
	}
	r = set_up(pi, fds[0], fds[1]);
	if (r < 0) {
		close(fds[0]);
		close(fds[1]);
		return r;
	}
	r = place_pair(fds, *next_fd);
	if (r == 0)
		*next_fd += 2;
	return r;
}

static int handed(const struct ckpt_restart_plan *plan, uint64_t key)
{
	for (uint32_t i = 0; i < plan->nsockets; i++)
		if (plan->sockets[i].ino == key)
			return plan->sockets[i].fd;
	return -1;
}

static int add_pty(const struct ckpt_image *img, const struct ckpt_fd_info *f,
		   struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	struct ckpt_pty_info pi;
	int r;

	if (handed(plan, CKPT_PLAN_PTY_MASTER(f->pty_index)) >= 0)
		return 0;	/* one pty, several holders */
	if (plan->nsockets + 2 > CKPT_PLAN_MAX_SOCKETS) {
		fprintf(stderr, "ckpt_restart: %s: fd %d: more than %d "
			"sockets and pseudo-terminal ends in the computation\n",
			img->path, f->fd, CKPT_PLAN_MAX_SOCKETS);
		return -E2BIG;
	}
	r = read_info(img, f, &pi);
	if (r == 0)
		r = make_pty(&pi, keep_fd_end);
	if (r < 0) {
		fprintf(stderr, "ckpt_restart: %s: fd %d: making a new "
			"pseudo-terminal for the master of /dev/pts/%u failed: "
			"%s\n", img->path, f->fd, f->pty_index,
			r == -EIO ? "its saved settings are missing" :
			r == -EINVAL ? "its saved settings name another pty" :
			strerror(-r));
		return r;
	}
	plan->sockets[plan->nsockets].ino = CKPT_PLAN_PTY_MASTER(f->pty_index);
	plan->sockets[plan->nsockets++].fd = *keep_fd_end - 2;
	plan->sockets[plan->nsockets].ino = CKPT_PLAN_PTY_SLAVE(f->pty_index);
	plan->sockets[plan->nsockets++].fd = *keep_fd_end - 1;
	return 0;
}

int restart_ptys_create(struct ckpt_image *imgs, int n,
			struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			int r;

			if (imgs[i].fds[j].kind != CKPT_FD_PTY_MASTER)
				continue;
			r = add_pty(&imgs[i], &imgs[i].fds[j], plan,
				    keep_fd_end);
			if (r < 0)
				return r;
		}
	return 0;
}

/* The new slave for image img's controlling terminal: a "/dev/pts/N" fd
 * of img whose master the computation held, or -1. */
int restart_ptys_slave_of(const struct ckpt_image *img,
			  const struct ckpt_restart_plan *plan)
{
	for (uint32_t i = 0; i < img->hdr.nfds; i++) {
		const struct ckpt_fd_info *f = &img->fds[i];
		const char *path = image_string(img, f->path);
		char *end;
		unsigned long n;
		int fd;

		if (f->kind != CKPT_FD_TTY || strncmp(path, "/dev/pts/", 9) ||
		    path[9] < '0' || path[9] > '9')
			continue;
		n = strtoul(path + 9, &end, 10);
		if (*end || n > 0xffffffffUL)
			continue;
		fd = handed(plan, CKPT_PLAN_PTY_SLAVE(n));
		if (fd >= 0)
			return fd;
	}
	return -1;
}
