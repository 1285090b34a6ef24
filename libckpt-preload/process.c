/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Process attributes: personality, working directory, umask, resource
 * limits, no_new_privs, "not dumpable" (PR_SET_DUMPABLE 0: agents that
 * hold keys forbid ptrace and core dumps), the child subreaper mark
 * (PR_SET_CHILD_SUBREAPER:
 * init-like programs, tini, a build tool reaping what its jobs leave)
 * and the interval timers (alarm/setitimer), re-armed
 * with the time they had left (timer_create timers: posix_timers.c).
 * Seccomp filters are not restored (the kernel lets no unprivileged
 * process read one back): a thread with one is said at the checkpoint. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
#include "ckpt/proc_stat.h"
#include "internal.h"

static char saved_cwd[4096];
static mode_t saved_umask;
static struct rlimit saved_limits[RLIM_NLIMITS];
static int saved_limit_ok[RLIM_NLIMITS];
static struct itimerval saved_timers[3];	/* REAL, VIRTUAL, PROF */
static int saved_personality;
static int saved_no_new_privs;
static int saved_subreaper;
static int saved_dumpable = 1;

static char status_buf[4096];	/* a /proc status file's text */

/* The value of "Name:\tN" in a /proc status file; -1 if absent. */
static int status_field(const char *path, const char *name)
{
	return ckpt_proc_status_field(path, name, status_buf,
				      sizeof(status_buf));
}

/* Threads under a seccomp filter (mode 2) or strict mode (1): the
 * restart cannot put one back, and the program would run unconfined. */
static void note_seccomp(void)
{
	struct ckpt_dir_iter it;
	char path[64];
	int tid;

	if (ckpt_dir_open(&it, "/proc/self/task") < 0)
		return;
	while ((tid = ckpt_dir_next_number(&it)) >= 0) {
		int mode, filters;

		ckpt_fmt(path, sizeof(path), "/proc/self/task/%d/status", tid);
		mode = status_field(path, "Seccomp");
		if (mode <= 0)
			continue;
		filters = ckpt_proc_field(status_buf, "Seccomp_filters");
		unrestored_add("thread %d: %s (%d filter%s): not restored, "
			       "the restarted thread runs without it",
			       vpid_virt_from_real(tid), mode == 1 ?
			       "seccomp strict mode" : "a seccomp filter",
			       filters < 0 ? 0 : filters,
			       filters == 1 ? "" : "s");
	}
	ckpt_dir_close(&it);
}

/* The namespaces a restart does not make again, in the order of
 * ckpt.base_ns and of CKPT_NS. */
enum { NS_USER, NS_MNT, NS_NET, NS_IPC, NS_UTS };
static const char *const ns_names[CKPT_NS_KINDS] = {
	[NS_USER] = "user", [NS_MNT] = "mnt", [NS_NET] = "net",
	[NS_IPC] = "ipc", [NS_UTS] = "uts",
};

/* The inode of the process's namespace of that kind; 0 if unknown. */
static uint64_t namespace_now(int kind)
{
	char path[32];
	struct stat st;

	ckpt_fmt(path, sizeof(path), "/proc/self/ns/%s", ns_names[kind]);
	return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* At the start: the computation's namespaces from CKPT_NS (set by the
 * process that exec'd this one), else this process's own. */
void namespaces_take_base(const char *env)
{
	char *end;

	for (int k = 0; k < CKPT_NS_KINDS; k++) {
		ckpt.base_ns[k] = env ? strtoull(env, &end, 10) : 0;
		if (env)
			env = *end == ',' ? end + 1 : end;
		if (!ckpt.base_ns[k])
			ckpt.base_ns[k] = namespace_now(k);
	}
}

/* After a restart: where the process runs now, the restart's. */
void namespaces_rebase(void)
{
	for (int k = 0; k < CKPT_NS_KINDS; k++)
		ckpt.base_ns[k] = namespace_now(k);
}

/* The process is in another namespace of that kind than the
 * computation (its inode in *now). */
static int namespace_left_base(int kind, uint64_t *now)
{
	*now = namespace_now(kind);
	return *now && ckpt.base_ns[kind] && *now != ckpt.base_ns[kind];
}

/* The process runs in another UTS namespace than the computation. */
int namespaces_own_uts(void)
{
	uint64_t now;

	return namespace_left_base(NS_UTS, &now);
}

/* "CKPT_NS=<user>,<mnt>,<net>,<ipc>,<uts>" for an exec. */
void namespaces_env(char *buf, size_t len)
{
	const uint64_t *b = ckpt.base_ns;

	ckpt_fmt(buf, len, "CKPT_NS=%llu,%llu,%llu,%llu,%llu",
		 (unsigned long long)b[0], (unsigned long long)b[1],
		 (unsigned long long)b[2], (unsigned long long)b[3],
		 (unsigned long long)b[4]);
}

/* A namespace the process made or entered after the computation started
 * (unshare -r, bubblewrap, nsenter, or a child cloned into one): a
 * restart does not make it again. */
static void note_namespaces(void)
{
	for (int k = 0; k < CKPT_NS_KINDS; k++) {
		uint64_t now;

		if (!namespace_left_base(k, &now))
			continue;
		unrestored_add("%s namespace %s:[%llu] (the computation "
			       "started in %s:[%llu]): not restored, the "
			       "restarted process runs in the one of "
			       "ckpt_restart", ns_names[k], ns_names[k],
			       (unsigned long long)now, ns_names[k],
			       (unsigned long long)ckpt.base_ns[k]);
	}
}

static int process_save(void)
{
	if (syscall(SYS_getcwd, saved_cwd, sizeof(saved_cwd)) < 0)
		saved_cwd[0] = 0;
	saved_personality = personality(0xffffffff);
	/* the main thread's (this is the manager thread, started before
	 * the program set it) */
	saved_no_new_privs = status_field("/proc/self/status",
					  "NoNewPrivs") == 1;
	note_seccomp();
	note_namespaces();
	if (prctl(PR_GET_CHILD_SUBREAPER, &saved_subreaper, 0, 0, 0) < 0)
		saved_subreaper = 0;
	saved_dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
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
	/* before the threads are made again: they inherit it */
	if (saved_no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		ckpt_log("cannot set no_new_privs again: %s", strerror(errno));
	if (saved_subreaper && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		ckpt_log("cannot be a child subreaper again: %s",
			 strerror(errno));
	/* a process that forbade ptrace and core dumps (it holds keys)
	 * must not come back open to them */
	if (saved_dumpable == 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		ckpt_log("cannot make the process not dumpable again: %s",
			 strerror(errno));
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
