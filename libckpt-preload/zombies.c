/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Children that exited before the checkpoint but were not reaped yet
 * (zombies). They are not processes of the computation any more (no
 * image), but their parent may still wait for them by the pid it stored.
 *
 * Saved when the whole computation is stopped (the drain step: a child
 * may exit while the others stop): every child listed in
 * /proc/self/task/<tid>/children that
 * waitid(WNOWAIT) shows as exited, with how it ended; nothing is reaped.
 * Restored: before the threads run, the restored parent forks (raw clone,
 * no glibc in the child) a child per zombie that ends the same way at
 * once, maps the zombie's pid to it, and takes the SIGCHLD this caused
 * (the original one was delivered, or is re-queued with the pending
 * signals later) unless a restored child has ended or stopped meanwhile:
 * that one's SIGCHLD is sent again.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

#define MAX_ZOMBIES	256

struct zombie {
	pid_t vpid;
	int code;		/* CLD_EXITED, CLD_KILLED or CLD_DUMPED */
	int status;		/* exit code or signal number */
};

static struct zombie zombies[MAX_ZOMBIES];
static int nzombies;

/* 1 when the child has a state to wait for (options: WEXITED and/or
 * WSTOPPED), left in si and not consumed; -1 when waitid itself fails. */
static int child_waitable(pid_t pid, int options, siginfo_t *si)
{
	memset(si, 0, sizeof(*si));
	if (syscall(SYS_waitid, P_PID, pid, si,
		    options | WNOHANG | WNOWAIT, NULL) < 0)
		return -1;
	return si->si_pid == pid;
}

static void note_if_zombie(pid_t real)
{
	siginfo_t si;

	if (nzombies == MAX_ZOMBIES || child_waitable(real, WEXITED, &si) != 1)
		return;
	zombies[nzombies].vpid = vpid_virt_from_real(real);
	zombies[nzombies].code = si.si_code;
	zombies[nzombies].status = si.si_status;
	nzombies++;
}

static void scan_children_of(const char *tid, void (*fn)(pid_t real))
{
	char path[96], buf[4096], *p, *end;

	ckpt_fmt(path, sizeof(path), "/proc/self/task/%s/children", tid);
	if (ckpt_read_small_file(path, buf, sizeof(buf)) <= 0)
		return;
	for (p = buf; *p;) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0)
			fn(pid);
		p = end;
	}
}

/* fn on every child of every thread of the process. */
static int for_each_child(void (*fn)(pid_t real))
{
	struct ckpt_dir_iter it;
	char name[16];
	int tid, r;

	r = ckpt_dir_open(&it, "/proc/self/task");
	if (r < 0)
		return r;
	while ((tid = ckpt_dir_next_number(&it)) >= 0) {
		ckpt_fmt(name, sizeof(name), "%d", tid);
		scan_children_of(name, fn);
	}
	ckpt_dir_close(&it);
	return 0;
}

static int nchildren;

static void count_child(pid_t real)
{
	(void)real;
	nchildren++;
}

static pid_t *listed;
static int nlisted, listed_max;

static void list_child(pid_t real)
{
	if (nlisted < listed_max)
		listed[nlisted] = real;
	nlisted++;
}

/* The children of every thread of the process (alive or zombies) into
 * out: how many, -E2BIG when there are more than max, -errno when /proc
 * cannot tell. For the coordinator (SUSPENDED), which then need not
 * read them from /proc itself. */
int process_list_children(pid_t *out, int max)
{
	int r;

	listed = out;
	listed_max = max;
	nlisted = 0;
	r = for_each_child(list_child);
	if (r < 0)
		return r;
	return nlisted > max ? -E2BIG : nlisted;
}

/* 1 when some thread of the process has a child (alive or a zombie), 0
 * when none has, -errno when /proc cannot tell. */
int process_has_children(void)
{
	int r;

	nchildren = 0;
	r = for_each_child(count_child);
	return r < 0 ? r : nchildren > 0;
}

static int zombies_save(void)
{
	nzombies = 0;
	return for_each_child(note_if_zombie);
}

/* In the new child: end as the zombie did. Raw system calls only. */
static void __attribute__((noreturn)) end_like(const struct zombie *z)
{
	struct rlimit no_core = { 0, 0 };
	uint64_t set = 1ULL << (z->status - 1);
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} dfl = { SIG_DFL, 0, NULL, 0 };

	if (z->code == CLD_KILLED || z->code == CLD_DUMPED) {
		if (z->code == CLD_KILLED)
			syscall(SYS_setrlimit, RLIMIT_CORE, &no_core);
		syscall(SYS_rt_sigaction, z->status, &dfl, NULL, 8);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &set, NULL, 8);
		syscall(SYS_kill, syscall(SYS_getpid), z->status);
	}
	for (;;)
		syscall(SYS_exit_group, z->code == CLD_EXITED ? z->status : 1);
}

/* Until the child is a zombie (it ends at once; bounded anyway). */
static void wait_until_ended(pid_t pid)
{
	struct timespec ms = { 0, 1000000 };
	siginfo_t si;

	for (int i = 0; i < 2000; i++) {
		if (child_waitable(pid, WEXITED, &si) != 0)
			return;
		syscall(SYS_nanosleep, &ms, NULL);
	}
}

static pid_t recreated[MAX_ZOMBIES];
static int changed_children;

static void note_if_changed(pid_t real)
{
	siginfo_t si;

	for (int i = 0; i < nzombies; i++)
		if (recreated[i] == real)
			return;
	if (child_waitable(real, WEXITED | WSTOPPED, &si) == 1)
		changed_children++;
}

/* Take the SIGCHLD the recreated zombies caused, but not one a restored
 * child sent meanwhile (it may have ended already: a parent that waits
 * for SIGCHLD, as make does for its jobserver, would wait forever). */
static void drop_sigchld(void)
{
	struct timespec zero = { 0, 0 };
	uint64_t set = 1ULL << (SIGCHLD - 1);

	while (syscall(SYS_rt_sigtimedwait, &set, NULL, &zero, 8) == SIGCHLD)
		;
	changed_children = 0;
	for_each_child(note_if_changed);
	if (changed_children)
		syscall(SYS_kill, syscall(SYS_getpid), SIGCHLD);
}

static int zombies_restore(const struct ckpt_restart_args *args)
{
	(void)args;
	for (int i = 0; i < nzombies; i++) {
		const struct zombie *z = &zombies[i];
		long pid = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);

		if (pid < 0) {
			ckpt_log("recreating the exited child %d (not reaped "
				 "at the checkpoint) failed: %s", (int)z->vpid,
				 strerror(errno));
			return -errno;
		}
		if (pid == 0)
			end_like(z);
		wait_until_ended(pid);
		recreated[i] = pid;
		vpid_map(z->vpid, pid);
	}
	if (nzombies)
		drop_sigchld();
	return 0;
}

const struct ckpt_resource_ops zombie_resource_ops = {
	.name = "exited children",
	.drain = zombies_save,	/* a child may exit while the others stop */
	.restore = zombies_restore,
};
