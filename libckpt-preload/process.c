/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Process attributes: personality, working directory, umask, resource
 * limits and the interval timers (alarm/setitimer), re-armed with the time
 * they had left (timer_create timers: posix_timers.c). */
#include <errno.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
#include "internal.h"

static char saved_cwd[4096];
static mode_t saved_umask;
static struct rlimit saved_limits[RLIM_NLIMITS];
static int saved_limit_ok[RLIM_NLIMITS];
static struct itimerval saved_timers[3];	/* REAL, VIRTUAL, PROF */
static int saved_personality;

static int process_save(void)
{
	if (syscall(SYS_getcwd, saved_cwd, sizeof(saved_cwd)) < 0)
		saved_cwd[0] = 0;
	saved_personality = personality(0xffffffff);
	saved_umask = umask(0);
	umask(saved_umask);
	for (int i = 0; i < RLIM_NLIMITS; i++)
		saved_limit_ok[i] = getrlimit(i, &saved_limits[i]) == 0;
	if (saved_limit_ok[RLIMIT_NOFILE])
		fd_headroom_program_limit(&saved_limits[RLIMIT_NOFILE]);
	for (int i = 0; i < 3; i++)
		if (getitimer(i, &saved_timers[i]) < 0)
			memset(&saved_timers[i], 0, sizeof(saved_timers[i]));
	return 0;
}

static void restore_timers(void)
{
	for (int i = 0; i < 3; i++) {
		const struct timeval *v = &saved_timers[i].it_value;

		if ((v->tv_sec || v->tv_usec) &&
		    setitimer(i, &saved_timers[i], NULL) < 0)
			ckpt_log("cannot re-arm interval timer %d: %s", i,
				 strerror(errno));
	}
}

static int process_restore(const struct ckpt_restart_args *args)
{
	(void)args;
	/* The loader may run with ADDR_NO_RANDOMIZE to place the program
	 * break; children the program starts get the saved personality. */
	if (saved_personality != -1)
		personality(saved_personality);
	if (saved_cwd[0] && chdir(saved_cwd) < 0)
		ckpt_log("cannot return to working directory %s: %s; "
			 "staying in the restart directory",
			 saved_cwd, strerror(errno));
	umask(saved_umask);
	for (int i = 0; i < RLIM_NLIMITS; i++) {
		struct rlimit cur;

		if (!saved_limit_ok[i] || getrlimit(i, &cur) < 0 ||
		    (cur.rlim_cur == saved_limits[i].rlim_cur &&
		     cur.rlim_max == saved_limits[i].rlim_max))
			continue;
		if (setrlimit(i, &saved_limits[i]) < 0)
			ckpt_log("cannot restore resource limit %d (%lu/%lu): %s",
				 i, (unsigned long)saved_limits[i].rlim_cur,
				 (unsigned long)saved_limits[i].rlim_max,
				 strerror(errno));
	}
	restore_timers();
	return 0;
}

const struct ckpt_resource_ops process_resource_ops = {
	.name = "process attributes",
	.save = process_save,
	.restore = process_restore,
};
