/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Template snapshots (docs/embedding.md, "Template snapshots"): a
 * snapshot of a computation of one process is kept as a frozen copy of
 * it, the template, instead of an image. At the snapshot the manager
 * thread, with every other thread stopped and every table of the image
 * writer made (thread contexts, fds and their offsets, drained pipes),
 * forks the template; the original resumes at once.
 *
 * The template waits for orders (ckpt_command, through sigqueue: see
 * CKPT_TEMPLATE_SIGNAL in ckpt/protocol.h):
 *   RESTORE  fork a child (copy-on-write: the template stays for the next
 *            restore) that becomes the process: the restart side of
 *            libckpt recreates its threads from the saved contexts,
 *            offsets and queued pipe bytes are put back, the process's
 *            old pids map to the new ones; stdio is the requester's.
 *            The template reaps it and reports its wait status.
 *   WRITE    fork a child that writes the snapshot's ordinary image
 *            (ckpt_command --checkpoint --from-snapshot).
 *
 * Lifetime: the template is no child of the program (the manager makes it
 * through a short-lived CLONE_VM helper that exits at once, so it is
 * reparented to the nearest subreaper; the manager goes on once the
 * helper has forked and reaps it before the snapshot's answer, so that
 * the template is out of the process's tree when a restore kills that
 * tree) and ends when the snapshot's
 * directory goes (--drop, the coordinator's exit: inotify) or when the
 * coordinator dies (its pidfd). It never stops: it sleeps in poll(2).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/protocol.h"
#include "image_writer.h"
#include "internal.h"

#define HELPER_STACK		(64 * 1024)
#define READY_MAX_MS		60000
#define CHILDREN_MAX		16

enum { TEMPLATE_STARTED, TEMPLATE_READY };

/* The page the original and the template share until it is ready. */
struct template_report {
	int forked;			/* futex word: the helper forked */
	int stage;			/* futex word */
	int error;
	pid_t pid;			/* the template */
	char message[512];
};

/* A child of the template: a restored process or an image writer, and
 * the requester's pipe its end is reported to. */
struct template_child {
	pid_t pid;
	int report_fd;
};

static struct {
	struct image_writer *w;
	struct forked_image img;
	char final_path[4096];
	char tmp_path[4096];
	char dir[4096];
	struct template_report *report;
	int coord_pidfd, dir_watch, order_fd;
	struct template_child children[CHILDREN_MAX];
	int stdio[3];			/* the requester's, for a restore */
	int closing;			/* the snapshot is gone: no orders */
	int order_out;			/* the requester's pipe of the order
					   being carried out */
	int memory_scanned;		/* w's memory tables are made */
	uint32_t restart_flags;		/* CKPT_RESTART_F_STOPPED or 0 */
	char *helper_stack;		/* the template runs on it */
	pid_t helper;			/* to reap (template_reap_helper) */
} tpl;

/* ----- in the template's children ----- */

/* The template's own mappings, in a child that does not run on them: not
 * the program's memory. */
static void unmap_template_areas(void)
{
	munmap(tpl.helper_stack, HELPER_STACK);
	munmap(tpl.report, sizeof(*tpl.report));
	tpl.helper = 0;
}


static void close_template_fds(void)
{
	close(tpl.coord_pidfd);
	close(tpl.dir_watch);
	close(tpl.order_fd);
	close(tpl.order_out);
	for (int i = 0; i < CHILDREN_MAX; i++)
		if (tpl.children[i].pid)
			close(tpl.children[i].report_fd);
}

/* Terminals, pipes and sockets on 0-2 become the requester's, as a
 * restart's become ckpt_restart's (files.c). */
static void take_requester_stdio(void)
{
	for (int fd = 0; fd < 3; fd++) {
		struct stat st;

		if (tpl.stdio[fd] < 0 || fstat(fd, &st) < 0 ||
		    S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
			continue;
		dup2(tpl.stdio[fd], fd);
	}
	for (int fd = 0; fd < 3; fd++)
		if (tpl.stdio[fd] > 2)
			close(tpl.stdio[fd]);
}

/* Drained pipes shared with the process it replaces: their bytes as at
 * the snapshot. */
static void refill_pipes(void)
{
	const struct blob *b = (const struct blob *)tpl.w->blobs.base;
	const struct ckpt_fd_info *f = (const struct ckpt_fd_info *)
				       tpl.w->fds.base;

	for (size_t i = 0; i < tpl.w->blobs.n; i++) {
		const struct ckpt_fd_info *fi = &f[b[i].index];
		int r;

		if (b[i].is_file || (fi->kind != CKPT_FD_PIPE &&
				     fi->kind != CKPT_FD_FIFO))
			continue;
		r = pipes_refill(fi->fd, b[i].fd, b[i].size);
		if (r < 0)
			ckpt_log("restore from a template: fd %d: putting "
				 "back the pipe's %llu bytes: %s", fi->fd,
				 (unsigned long long)b[i].size, strerror(-r));
	}
}

static int is_program_fd(int fd)
{
	const struct ckpt_fd_info *f = (const struct ckpt_fd_info *)
				       tpl.w->fds.base;

	for (size_t i = 0; i < tpl.w->fds.n; i++)
		if (f[i].fd == fd)
			return 1;
	return 0;
}

/* What was saved from descriptors (the round's memfds and the template's
 * copies of them) is the template's, not the program's. */
static void close_saved_content(void)
{
	const struct blob *b = (const struct blob *)tpl.w->blobs.base;

	for (size_t i = 0; i < tpl.w->blobs.n; i++)
		if (b[i].fd >= 0 && !is_program_fd(b[i].fd))
			close(b[i].fd);
	pipes_end_round();
}

/* On ckpt_restore_stack with the main thread's TLS, every signal blocked:
 * the restart sequence of restore.c from step 2 on, over memory and fds
 * the fork brought. */
static void become_restored(void *unused)
{
	char err[512];
	int r;

	(void)unused;
	close_template_fds();
	unmap_template_areas();
	take_requester_stdio();
	vpid_init(ckpt.vpid, ckpt_real_getpid());
	/* the fork kept cwd, umask and limits; not the interval timers */
	process_resource_ops.restore(NULL);
	files_rewind_offsets();
	files_renew_event_fds();
	refill_pipes();
	close_saved_content();
	r = threads_restore_all(err, sizeof(err));
	if (r < 0) {
		ckpt_log("restore from a template: recreating threads: %s",
			 err);
		syscall(SYS_exit_group, 1);
	}
	posix_timers_restore();
	embedding_note_restored();
	debugger_stop_if_asked(tpl.restart_flags);
	threads_release_restored();
}

/* ----- in the template ----- */

static void report(int fd, int event, int value)
{
	struct ckpt_template_report rep = { event, value };

	if (fd >= 0 && write(fd, &rep, sizeof(rep)) < 0)
		return;	/* the requester is gone */
}

static int take_fd(int pidfd, int fd)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

static struct template_child *free_child(void)
{
	for (int i = 0; i < CHILDREN_MAX; i++)
		if (!tpl.children[i].pid)
			return &tpl.children[i];
	return NULL;
}

/* The image writer's child: the snapshot's image, synced, renamed over. */
static void write_image(void *unused)
{
	char err[512] = "";
	int r;

	(void)unused;
	unmap_template_areas();
	r = tpl.memory_scanned ? 0 : memory_scan(tpl.w, err, sizeof(err));
	if (r == 0)
		r = image_write_in_copy(tpl.w, &tpl.img, err, sizeof(err));
	if (r == 0 && rename(tpl.tmp_path, tpl.final_path) < 0)
		r = -errno;
	if (r < 0) {
		ckpt_log("writing the image of a template snapshot to %s: %s",
			 tpl.final_path, err[0] ? err : strerror(-r));
		unlink(tpl.tmp_path);
	}
	syscall(SYS_exit_group, r < 0 ? 1 : 0);
}

static long fork_child(int what)
{
	if (what == CKPT_TEMPLATE_RESTORE)
		return ckpt_clone_thread(SIGCHLD | CLONE_SETTLS,
					 ckpt_restore_stack +
					 ckpt_restore_stack_size, NULL, NULL,
					 threads_main_tls(), become_restored,
					 NULL);
	/* as the forked copy does: on the dead part of the manager's stack,
	 * which the writer saves from one copy (extent_encode.c), not on
	 * memory it would save while it changes */
	return ckpt_clone_thread(SIGCHLD, (char *)(uintptr_t)
				 threads_manager_slot()->ctx.sp - 512, NULL,
				 NULL, 0, write_image, NULL);
}

static void take_stdio(int pidfd)
{
	for (int fd = 0; fd < 3; fd++)
		tpl.stdio[fd] = take_fd(pidfd, fd);
}

static void drop_stdio(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (tpl.stdio[fd] >= 0)
			close(tpl.stdio[fd]);
		tpl.stdio[fd] = -1;
	}
}

/* The image is the snapshot's and only this template writes it: once
 * it is there, a WRITE (each restore of a tree) has nothing to do. */
static int written_before(void)
{
	return access(tpl.final_path, F_OK) == 0;
}

static void carry_out(uint64_t order)
{
	int what = CKPT_TEMPLATE_ORDER_WHAT(order) & ~CKPT_TEMPLATE_F_STOPPED;
	int pidfd = (int)syscall(SYS_pidfd_open,
				 CKPT_TEMPLATE_ORDER_PID(order), 0);
	struct template_child *slot = tpl.closing ? NULL : free_child();
	int out = pidfd < 0 ? -1 : take_fd(pidfd, CKPT_TEMPLATE_ORDER_FD(order));
	long pid;

	if (out < 0 || (what != CKPT_TEMPLATE_RESTORE &&
			what != CKPT_TEMPLATE_WRITE)) {
		if (pidfd >= 0)
			close(pidfd);
		if (out >= 0)
			close(out);
		return;
	}
	if (what == CKPT_TEMPLATE_RESTORE)
		take_stdio(pidfd);
	close(pidfd);
	if (what == CKPT_TEMPLATE_WRITE && written_before()) {
		report(out, CKPT_TEMPLATE_WRITTEN, 0);
		close(out);
		return;
	}
	tpl.order_out = out;
	tpl.restart_flags = CKPT_TEMPLATE_ORDER_WHAT(order) &
			    CKPT_TEMPLATE_F_STOPPED ? CKPT_RESTART_F_STOPPED : 0;
	pid = slot ? fork_child(what) : -EAGAIN;
	drop_stdio();
	if (pid < 0) {
		report(out, CKPT_TEMPLATE_FAILED, (int)pid);
		close(out);
		return;
	}
	slot->pid = (pid_t)pid;
	slot->report_fd = out;
	if (what == CKPT_TEMPLATE_RESTORE)
		report(out, CKPT_TEMPLATE_STARTED, (int)pid);
}

static void reap_children(void)
{
	for (int i = 0; i < CHILDREN_MAX; i++) {
		struct template_child *c = &tpl.children[i];
		int status;

		if (!c->pid || syscall(SYS_wait4, c->pid, &status, WNOHANG, NULL) != c->pid)
			continue;
		if (c->report_fd >= 0) {
			int written = WIFEXITED(status) &&
				      WEXITSTATUS(status) == 0 ? 0 : -EIO;

			report(c->report_fd, CKPT_TEMPLATE_EXITED, status);
			report(c->report_fd, CKPT_TEMPLATE_WRITTEN, written);
			close(c->report_fd);
		}
		c->pid = 0;
	}
}

static void read_signals(void)
{
	struct signalfd_siginfo si;

	while (read(tpl.order_fd, &si, sizeof(si)) == sizeof(si)) {
		if ((int)si.ssi_signo == SIGCHLD)
			reap_children();
		else if ((int)si.ssi_signo == CKPT_TEMPLATE_SIGNAL &&
			 si.ssi_code == SI_QUEUE &&
			 (int)si.ssi_pid ==
			 CKPT_TEMPLATE_ORDER_PID(si.ssi_ptr))
			carry_out(si.ssi_ptr);	/* the sender's own fds */
	}
	reap_children();	/* SIGCHLDs coalesce */
}

static int live_children(void)
{
	int n = 0;

	for (int i = 0; i < CHILDREN_MAX; i++)
		n += tpl.children[i].pid != 0;
	return n;
}

/* Until the snapshot's directory or the coordinator goes; then no more
 * orders, but the processes restored from it are still reaped and
 * their end reported (their ckpt_command waits for it). */
static void serve_orders(void)
{
	struct pollfd p[3] = {
		{ tpl.order_fd, POLLIN, 0 },
		{ tpl.dir_watch, POLLIN, 0 },
		{ tpl.coord_pidfd, POLLIN, 0 },
	};

	while (!tpl.closing || live_children()) {
		if (poll(p, 3, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents || p[2].revents) {
			tpl.closing = 1;
			p[1].fd = p[2].fd = -1;
		}
		if (p[0].revents)
			read_signals();
	}
	syscall(SYS_exit_group, 0);
}

static int watch_for_the_end(char *err, size_t errlen)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, CKPT_TEMPLATE_SIGNAL);
	tpl.order_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	tpl.dir_watch = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (tpl.order_fd < 0 || tpl.dir_watch < 0 ||
	    inotify_add_watch(tpl.dir_watch, tpl.dir, IN_DELETE_SELF |
			      IN_MOVE_SELF) < 0) {
		ckpt_fmt(err, errlen, "the template's watch on %s: %s",
			 tpl.dir, strerror(errno));
		return -errno;
	}
	return 0;
}

/* Forked by the helper: the original waits for READY only when the
 * template must first take its own copy of shared memory or of content
 * from descriptors (forked_copy.c); its watch fds came made. */
static void run_template(int hold_data)
{
	struct template_report *rep = tpl.report;
	sigset_t all;
	int r = 0;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	close(ckpt.coord_fd);	/* the original's connection */
	for (int i = 0; i < 3; i++)
		tpl.stdio[i] = -1;
	if (hold_data) {
		rep->message[0] = 0;
		r = forked_copy_hold_data(tpl.w, rep->message,
					  sizeof(rep->message));
		rep->error = r;
		__atomic_store_n(&rep->stage, TEMPLATE_READY,
				 __ATOMIC_RELEASE);
		syscall(SYS_futex, &rep->stage, FUTEX_WAKE, INT_MAX, NULL,
			NULL, 0);
	}
	if (r < 0)
		syscall(SYS_exit_group, 1);
	serve_orders();
}

/* The CLONE_VM helper: forks the template (a copy of the memory it
 * shares with the original) and exits, so the template has no parent
 * in the program. */
static void fork_template(void *hold_data)
{
	long pid = syscall(SYS_clone, 0, NULL, NULL, NULL, 0);

	if (pid == 0)
		run_template(hold_data != NULL);
	tpl.report->pid = pid > 0 ? (pid_t)pid : 0;
	tpl.report->error = pid > 0 ? 0 : -errno;
	__atomic_store_n(&tpl.report->forked, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &tpl.report->forked, FUTEX_WAKE, INT_MAX, NULL,
		NULL, 0);
	syscall(SYS_exit, 0);
}

/* ----- in the original ----- */

static pid_t coordinator_pid;

int template_needs_memory_scan(void)
{
	struct shared_region one[1];

	return memory_shared_regions(one, 1) != 0;
}

/* The pid the coordinator gave with its order (0: none). */
void template_note_coordinator(pid_t pid)
{
	coordinator_pid = pid;
}

/* A pidfd of the coordinator, which the template watches: only a
 * coordinator on this host (a Unix socket; the pid it gave is there)
 * can have a template. */
static int coordinator_pidfd(void)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);

	if (coordinator_pid <= 0 ||
	    getpeername(ckpt.coord_fd, (struct sockaddr *)&sa, &len) < 0 ||
	    sa.sun_family != AF_UNIX)
		return -EOPNOTSUPP;
	return (int)syscall(SYS_pidfd_open, coordinator_pid, 0);
}

/* Until the helper has forked the template (its exit is not waited
 * for: template_reap_helper). */
static int wait_forked(void)
{
	struct timespec slice = { 0, 100 * 1000000L };

	for (int waited = 0; waited <= READY_MAX_MS; waited += 100) {
		if (__atomic_load_n(&tpl.report->forked, __ATOMIC_ACQUIRE))
			return 0;
		syscall(SYS_futex, &tpl.report->forked, FUTEX_WAIT, 0, &slice,
			NULL, 0);
	}
	return -ETIMEDOUT;
}

/* The helper's end, then its stack and the report page go: before the
 * snapshot's answer (the manager's, once the threads resumed), or on the
 * next snapshot. Once the helper is reaped the template is no
 * descendant of this process. */
void template_reap_helper(void)
{
	long r;

	if (!tpl.helper)
		return;
	while ((r = syscall(SYS_wait4, tpl.helper, NULL, __WCLONE, NULL)) < 0
	       && errno == EINTR)
		;
	/* only our own helper's areas: in a process restored or restarted
	 * from a template the number is a stale copy, its areas gone */
	if (r == tpl.helper) {
		munmap(tpl.helper_stack, HELPER_STACK);
		munmap(tpl.report, sizeof(*tpl.report));
	}
	tpl.helper = 0;
}

static int wait_ready(void)
{
	struct timespec slice = { 0, 100 * 1000000L };

	for (int waited = 0; waited <= READY_MAX_MS; waited += 100) {
		if (__atomic_load_n(&tpl.report->stage, __ATOMIC_ACQUIRE) ==
		    TEMPLATE_READY)
			return tpl.report->error;
		if (syscall(SYS_kill, tpl.report->pid, 0) < 0 &&
		    errno == ESRCH)
			return -ECHILD;
		syscall(SYS_futex, &tpl.report->stage, FUTEX_WAIT,
			TEMPLATE_STARTED, &slice, NULL, 0);
	}
	return -ETIMEDOUT;
}

static int dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash || (size_t)(slash - path) >= len)
		return -EINVAL;
	memcpy(dir, path, slash - path);
	dir[slash - path] = 0;
	return 0;
}

static void close_watch_fds(void)
{
	close(tpl.order_fd);
	close(tpl.dir_watch);
}

static int make_template(char *err, size_t errlen)
{
	char *stack = mmap(NULL, HELPER_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int hold = forked_copy_holds_changing_data(tpl.w), r;
	long helper;

	if (stack == MAP_FAILED)
		return -ENOMEM;
	tpl.helper_stack = stack;
	r = watch_for_the_end(err, errlen);
	helper = r < 0 ? r : ckpt_clone_thread(CLONE_VM, stack + HELPER_STACK,
					       NULL, NULL, 0, fork_template,
					       hold ? &hold : NULL);
	if (helper > 0) {
		tpl.helper = (pid_t)helper;
		if (wait_forked() < 0)
			tpl.report->error = -ETIMEDOUT;
	} else {
		munmap(stack, HELPER_STACK);
	}
	close_watch_fds();
	if (r < 0)
		return r;
	r = helper < 0 ? (int)helper : tpl.report->error;
	if (r < 0) {
		ckpt_fmt(err, errlen, "forking the snapshot's template: %s",
			 strerror(-r));
		return r;
	}
	r = hold ? wait_ready() : 0;
	if (r < 0)
		ckpt_fmt(err, errlen, "the snapshot's template (pid %d): %s",
			 (int)tpl.report->pid, tpl.report->message[0] ?
			 tpl.report->message : strerror(-r));
	if (r < 0)
		syscall(SYS_kill, tpl.report->pid, SIGKILL);
	return r;
}

/* Called with every other thread stopped and w's tables complete. */
int template_start(struct image_writer *w, const struct forked_image *img,
		   const char *final_path, int memory_scanned, pid_t *pid,
		   char *err, size_t errlen)
{
	int r;

	template_reap_helper();
	tpl.memory_scanned = memory_scanned;
	tpl.coord_pidfd = coordinator_pidfd();
	if (tpl.coord_pidfd < 0)
		return -EOPNOTSUPP;	/* also a coordinator that is gone */
	tpl.w = w;
	tpl.img = *img;
	ckpt_fmt(tpl.final_path, sizeof(tpl.final_path), "%s", final_path);
	ckpt_fmt(tpl.tmp_path, sizeof(tpl.tmp_path), "%s", img->tmp_path);
	tpl.img.tmp_path = tpl.tmp_path;
	if (dir_of(final_path, tpl.dir, sizeof(tpl.dir)) < 0) {
		close(tpl.coord_pidfd);
		return -EOPNOTSUPP;
	}
	tpl.report = mmap(NULL, sizeof(*tpl.report), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tpl.report == MAP_FAILED) {
		close(tpl.coord_pidfd);
		ckpt_fmt(err, errlen, "mapping the template's report page: %s",
			 strerror(errno));
		return -ENOMEM;
	}
	memset(tpl.report, 0, sizeof(*tpl.report));
	r = make_template(err, errlen);
	*pid = tpl.report->pid;
	close(tpl.coord_pidfd);
	if (!tpl.helper)
		munmap(tpl.report, sizeof(*tpl.report));
	else if (r < 0)
		template_reap_helper();
	return r;
}
