/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The session and the controlling terminal. Saved: the session as the
 * program sees it (its leader's virtual pid), whether the process had a
 * controlling terminal, and which process group was in the foreground on
 * it. The image header tells ckpt_restart which processes led their
 * session and had a terminal: restart/process_tree.c makes the sessions
 * and gives them ckpt_restart's terminal before the children are forked.
 *
 * Restored: once the groups exist (process_group.c), the group that was
 * in the foreground gets the terminal (tcsetpgrp), but only if
 * ckpt_restart's group had it: a restart run in the background does not
 * take the terminal from the shell. A computation that stays in
 * ckpt_restart's session (restarted from a shell) still sees its old
 * session id in getsid().
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

static pid_t saved_vsid;	/* 0: unknown */
static int had_terminal;
static pid_t saved_foreground;	/* virtual pgid; 0: none */

/* After a restart: the session the process is in (restored_real_sid; 0
 * when its leader is outside our pid namespace, as getsid() then says)
 * stands for saved_vsid. */
static pid_t restored_real_sid, restored_vsid;
static int session_renamed;
static int may_take_foreground;

struct stat_ids {
	long sid, tty_nr, tpgid;
};

/* session, tty_nr and tpgid: fields 6-8 of /proc/self/stat, after the
 * command name in parentheses (which may hold anything). */
static int read_stat_ids(struct stat_ids *ids)
{
	long field[6] = { 0 };
	char buf[1024], *p;
	int n = 0;

	if (ckpt_read_small_file("/proc/self/stat", buf, sizeof(buf)) < 0)
		return -EIO;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EIO;
	p += 4;			/* ") S " */
	while (n < 6 && *p) {
		int neg = *p == '-';

		p += neg;
		while (*p >= '0' && *p <= '9')
			field[n] = field[n] * 10 + (*p++ - '0');
		field[n] = neg ? -field[n] : field[n];
		n++;
		if (*p++ != ' ')
			break;
	}
	if (n < 5)
		return -EIO;
	ids->sid = field[2];
	ids->tty_nr = field[3];
	ids->tpgid = field[4];
	return 0;
}

pid_t session_virt_from_real(pid_t real)
{
	if (session_renamed && real >= 0 && real == restored_real_sid)
		return restored_vsid;
	return real > 0 ? vpid_virt_from_real(real) : real;
}

static int session_save(void)
{
	struct stat_ids ids;
	int r = read_stat_ids(&ids);

	if (r < 0)
		return r;
	saved_vsid = session_virt_from_real(ids.sid);
	had_terminal = ids.tty_nr != 0;
	saved_foreground = had_terminal && ids.tpgid > 0 ?
			   vpid_virt_from_real(ids.tpgid) : 0;
	return 0;
}

uint64_t session_image_flags(void)
{
	uint64_t flags = 0;

	if (saved_vsid == ckpt.vpid)
		flags |= CKPT_IMG_F_SESSION_LEADER;
	if (had_terminal)
		flags |= CKPT_IMG_F_CTTY;
	if (ckpt.launched)
		flags |= CKPT_IMG_F_LAUNCHED;
	return flags;
}

static int open_controlling_terminal(void)
{
	return open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
}

/* A group of the restarted computation: its real id maps to a virtual one
 * (or is one: the pid map of a computation never restarted is empty). */
static int restored_group(pid_t real)
{
	return vpid_virt_from_real(real) != real || vpid_known(real);
}

/* Still in ckpt_restart's group here: did that group (or, already, one of
 * the computation) have the terminal? */
static void note_foreground_owner(void)
{
	int tty = open_controlling_terminal();
	pid_t fg;

	if (tty < 0)
		return;
	if (ioctl(tty, TIOCGPGRP, &fg) == 0)
		may_take_foreground = fg == syscall(SYS_getpgid, 0) ||
				      restored_group(fg);
	close(tty);
}

static int session_restore(const struct ckpt_restart_args *args)
{
	pid_t real_sid = syscall(SYS_getsid, 0);

	(void)args;
	session_renamed = 0;
	may_take_foreground = 0;
	if (saved_vsid > 0 && real_sid >= 0 &&
	    vpid_real_from_virt(saved_vsid) != real_sid) {
		restored_real_sid = real_sid;
		restored_vsid = saved_vsid;
		session_renamed = 1;
	}
	if (saved_foreground)
		note_foreground_owner();
	return 0;
}

/* Called once the process is in its group again (vpgid: the group it
 * was in at the checkpoint). */
void session_restore_foreground(pid_t vpgid)
{
	pid_t pgid = syscall(SYS_getpgid, 0);
	int tty;

	if (!may_take_foreground || vpgid != saved_foreground ||
	    pgid != vpid_real_from_virt(vpgid))
		return;
	tty = open_controlling_terminal();
	if (tty < 0)
		return;
	/* signals are blocked here: no SIGTTOU from the background */
	if (ioctl(tty, TIOCSPGRP, &pgid) < 0)
		ckpt_log("cannot give the terminal back to process group %d: "
			 "%s", (int)vpgid, strerror(errno));
	close(tty);
}

const struct ckpt_resource_ops session_resource_ops = {
	.name = "session",
	.save = session_save,
	.restore = session_restore,
};
