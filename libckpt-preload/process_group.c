/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process group. Saved: the group as the program sees it (the virtual
 * pid of its leader). Restored, once the pid map of the computation is
 * loaded: a process that led its group leads a new one (setpgid(0, 0));
 * a member of a group whose leader was restored with it joins the
 * leader's new group, waiting (at most 2 s) until the leader has made it.
 * A process already in the group (a session leader that ckpt_restart
 * made itself, which may not move) has nothing to do. The groups are made
 * in the sessions restored before (session.c); a group whose leader is
 * not restarted (outside the computation) is not recreated and not
 * waited for: the process stays in ckpt_restart's group, with a note when
 * the leader was known (the parent of an exec). Then the group that was
 * in the foreground of the terminal gets it again (session.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

#define JOIN_TIMEOUT_MS	2000

static pid_t saved_vpgid;

static int group_save(void)
{
	long pgid = syscall(SYS_getpgid, 0);

	saved_vpgid = pgid > 0 ? vpid_virt_from_real(pgid) : 0;
	return 0;
}

/* real: the group's leader, 0 for this process itself. */
static int join_group(pid_t real)
{
	struct timespec ms = { 0, 1000000 };
	pid_t pgid = real ? real : ckpt_real_getpid();

	for (int i = 0; i < JOIN_TIMEOUT_MS; i++) {
		if (syscall(SYS_getpgid, 0) == pgid ||
		    syscall(SYS_setpgid, 0, real) == 0)
			return 0;
		if (errno != EPERM)
			return -errno;
		syscall(SYS_nanosleep, &ms, NULL);
	}
	return -ETIMEDOUT;
}

/* The leader was known but is not restarted: a process outside the
 * computation (the parent of a program that exec'd, e.g. `timeout`
 * running a shell shim), or one whose image was not given. It is not
 * coming back, so its group cannot be joined. */
static void note_leader_not_restarted(void)
{
	ckpt_log("note: process group %d was led by process %d, which is "
		 "not restarted (outside the computation, or its image was "
		 "not given); the process stays in ckpt_restart's process "
		 "group %ld", (int)saved_vpgid, (int)saved_vpgid,
		 (long)syscall(SYS_getpgid, 0));
}

static int group_restore(const struct ckpt_restart_args *args)
{
	pid_t real;
	int r;

	(void)args;
	if (saved_vpgid <= 0)
		return 0;
	/* during a restore the pid table holds only this process and the
	 * processes of the restart plan (vpid_init cleared it) */
	if (!vpid_known(saved_vpgid)) {
		if (vpid_known_before_restart(saved_vpgid))
			note_leader_not_restarted();
		return 0;
	}
	real = saved_vpgid == ckpt.vpid ? 0 : vpid_real_from_virt(saved_vpgid);
	r = join_group(real);
	if (r < 0)
		ckpt_log("cannot recreate process group %d (%s): %s; staying in "
			 "ckpt_restart's group", (int)saved_vpgid,
			 real ? "led by another restored process" : "its own",
			 strerror(-r));
	session_restore_foreground(saved_vpgid);
	return 0;
}

const struct ckpt_resource_ops process_group_resource_ops = {
	.name = "process group",
	.save = group_save,
	.restore = group_restore,
};
