// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Restart a whole computation as the tree it was: every restored process
 * is forked by the process that becomes its restored parent, before any
 * loader runs, so getppid, wait and signals between them work as before.
 *
 *   1. tree: each image's parent is the image whose vpid is its vppid;
 *      images without one are roots
 *   2. plan (include/ckpt/restart_plan.h) in a shared memfd: the vpids,
 *      the pipes (restart_pipes.c), the socket pairs (restart_sockets.c),
 *      the FIFOs (restart_fifos.c), the open files processes shared
 *      (restart_files.c)
 *   3. fork: ckpt_restart's process forks the roots' children (one root:
 *      it becomes the root itself) or the roots (several: it waits for
 *      them); each forked process writes its real pid into the plan, makes
 *      its session if it led one (setsid, so that the children it forks
 *      next are born in it) and forks its own children
 *   4. when every real pid is known, "go": every process execs the loader
 *      for its image, keeping the plan and the pipes open for libckpt,
 *      which loads the virtual->real pid map before any thread runs
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "host_map.h"
#include "process_tree.h"

#define GO_TIMEOUT_MS	15000

struct tree {
	struct ckpt_image *imgs;
	int n;
	int *parent;			/* index of the parent image, -1: root */
	struct ckpt_restart_plan *plan;	/* shared mapping of plan_fd */
	int plan_fd, keep_fd_end;
	const char *coord, *ckpt_dir;
	int roots_get_terminal;		/* roots that led a session make one */
};

static int find_vpid(const struct tree *t, int vpid)
{
	for (int i = 0; i < t->n; i++)
		if (t->imgs[i].hdr.vpid == vpid)
			return i;
	return -1;
}

/* Parents by vpid; refuse duplicates and cycles (crafted images). */
static int build_tree(struct tree *t)
{
	for (int i = 0; i < t->n; i++) {
		int dup = find_vpid(t, t->imgs[i].hdr.vpid);

		if (dup != i) {
			fprintf(stderr, "ckpt_restart: %s and %s: both are the "
				"process with pid %d; give the images of one "
				"checkpoint\n", t->imgs[dup].path,
				t->imgs[i].path, t->imgs[i].hdr.vpid);
			return -EINVAL;
		}
		t->parent[i] = t->imgs[i].hdr.vppid == t->imgs[i].hdr.vpid ?
			       -1 : find_vpid(t, t->imgs[i].hdr.vppid);
	}
	for (int i = 0; i < t->n; i++) {
		int p = i, steps = 0;

		while (p >= 0 && steps++ <= t->n)
			p = t->parent[p];
		if (p >= 0) {
			fprintf(stderr, "ckpt_restart: %s: its parent chain "
				"(pid %d, parent %d) is a cycle: the images are "
				"inconsistent\n", t->imgs[i].path,
				t->imgs[i].hdr.vpid, t->imgs[i].hdr.vppid);
			return -EINVAL;
		}
	}
	return 0;
}


/* The highest fd number open in ckpt_restart (the shell may have passed
 * it any), -1 if unknown. */
static int highest_open_fd(void)
{
	char buf[4096];
	int dir, top = -1;
	long n;

	dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0)
		for (long pos = 0; pos < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + pos);

			pos += d->d_reclen;
			if (d->d_name[0] >= '0' && d->d_name[0] <= '9' &&
			    atoi(d->d_name) > top && atoi(d->d_name) != dir)
				top = atoi(d->d_name);
		}
	close(dir);
	return top;
}

/* Above every fd number the images saved, when the fds the plan may hand
 * over (at most two per saved fd) fit below the limit there: a restored
 * process then keeps each handed fd where it is instead of moving it out
 * of its saved fds' way (libckpt-preload/files.c), two system calls per
 * fd in every process. 0 if not. */
static int above_saved_fds(const struct tree *t)
{
	struct rlimit lim;
	int top = 2;
	uint64_t nfds = 0;

	for (int i = 0; i < t->n; i++) {
		nfds += t->imgs[i].hdr.nfds;
		for (uint32_t j = 0; j < t->imgs[i].hdr.nfds; j++)
			/* a connection taken from a listener's queue is
			 * named by a descriptor of libckpt's, high up, and
			 * not restored at that number */
			if (!(t->imgs[i].fds[j].fd_flags &
			      CKPT_FDF_IN_BACKLOG) &&
			    t->imgs[i].fds[j].fd > top)
				top = t->imgs[i].fds[j].fd;
	}
	if (getrlimit(RLIMIT_NOFILE, &lim) < 0 ||
	    (uint64_t)top + 1 + 2 * nfds + 64 > lim.rlim_cur ||
	    top + 1 + 2 * nfds + 64 > 65536)
		return 0;
	return top + 1;
}

/* The plan and the pipes and sockets handed to the restored processes
 * take a range of descriptor numbers that the loader keeps open; it must
 * start above every descriptor ckpt_restart has, so the range holds
 * nothing else, and above `floor`. */
static int above_open_fds(int fd, int floor)
{
	int top = highest_open_fd(), moved;

	if (fd < 0)
		return fd;
	if (top < floor - 1)
		top = floor - 1;
	if (fd > top)
		return fd;
	moved = fcntl(fd, F_DUPFD, top + 1);
	close(fd);
	return moved;
}

static int create_plan(struct tree *t)
{
	struct ckpt_restart_plan *plan;
	int fd;

	if (t->n > CKPT_PLAN_MAX_PROCS) {
		fprintf(stderr, "ckpt_restart: %d images: at most %d processes "
			"can be restarted together\n", t->n,
			CKPT_PLAN_MAX_PROCS);
		return -E2BIG;
	}
	fd = above_open_fds(memfd_create("ckpt-restart-plan", 0),
			    above_saved_fds(t));
	if (fd < 0 || ftruncate(fd, sizeof(*plan)) < 0) {
		fprintf(stderr, "ckpt_restart: creating the restart plan "
			"failed: %s\n", strerror(errno));
		return -errno;
	}
	plan = mmap(NULL, sizeof(*plan), PROT_READ | PROT_WRITE, MAP_SHARED,
		    fd, 0);
	if (plan == MAP_FAILED) {
		fprintf(stderr, "ckpt_restart: mapping the restart plan "
			"failed: %s\n", strerror(errno));
		close(fd);
		return -ENOMEM;
	}
	plan->magic = CKPT_RESTART_PLAN_MAGIC;
	plan->version = CKPT_RESTART_PLAN_VERSION;
	plan->nprocs = t->n;
	for (int i = 0; i < t->n; i++) {
		plan->procs[i].vpid = t->imgs[i].hdr.vpid;
		plan->procs[i].vppid = t->imgs[i].hdr.vppid;
	}
	restart_host_map_plan(plan);
	t->plan = plan;
	t->plan_fd = fd;
	t->keep_fd_end = fd + 1;
	return 0;
}

/* The kept range [plan_fd, keep_fd_end) must hold no image: the loader
 * of another image would keep it open. */
static int check_kept_range(const struct tree *t)
{
	for (int i = 0; i < t->n; i++)
		if (t->imgs[i].fd >= t->plan_fd &&
		    t->imgs[i].fd < t->keep_fd_end) {
			fprintf(stderr, "ckpt_restart: %s: image fd %d lies "
				"among the fds handed to the restored processes "
				"(%d-%d)\n", t->imgs[i].path, t->imgs[i].fd,
				t->plan_fd, t->keep_fd_end - 1);
			return -EINVAL;
		}
	return 0;
}

static void sleep_1ms(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

static int all_known(const struct ckpt_restart_plan *plan)
{
	for (uint32_t i = 0; i < plan->nprocs; i++)
		if (!__atomic_load_n(&plan->procs[i].real_pid,
				     __ATOMIC_ACQUIRE))
			return 0;
	return 1;
}

/* In a forked process: wait for ckpt_restart's go (or its failure). */
static int wait_for_go(const struct ckpt_restart_plan *plan)
{
	for (int ms = 0; ms < GO_TIMEOUT_MS; ms++) {
		if (__atomic_load_n(&plan->failed, __ATOMIC_ACQUIRE))
			return -ECANCELED;
		if (__atomic_load_n(&plan->go, __ATOMIC_ACQUIRE))
			return 0;
		sleep_1ms();
	}
	return -ETIMEDOUT;
}

static void fail_plan(struct tree *t)
{
	__atomic_store_n(&t->plan->failed, 1, __ATOMIC_RELEASE);
}

/* Returns only on failure, after printing why. */
static void exec_image(struct tree *t, int i)
{
	exec_loader(&t->imgs[i], t->coord, t->ckpt_dir, t->plan_fd,
		    t->keep_fd_end);
}

static int fork_children(struct tree *t, int i);

/* The first terminal among ckpt_restart's stdin, stdout, stderr. */
static int restart_terminal(void)
{
	struct termios tio;

	for (int fd = 0; fd < 3; fd++)
		if (ioctl(fd, TCGETS, &tio) == 0)
			return fd;
	return -1;
}

/* A process that led a session leads one again, with ckpt_restart's
 * terminal as its controlling terminal if it had one and the terminal is
 * free (TIOCSCTTY never steals it); done before it forks its children, so
 * they are born in the session, with the terminal. A root stays in
 * ckpt_restart's session (with its terminal) unless roots_get_terminal.
 * A process holding the slave of a pty the computation made (a shell in
 * tmux) gets the new slave instead (restart_ptys.c). */
static void make_session(const struct tree *t, int i)
{
	const struct ckpt_image *img = &t->imgs[i];
	int root = t->parent[i] < 0, tty = restart_ptys_slave_of(img, t->plan);
	int own = tty >= 0;

	if (!own)
		tty = restart_terminal();

	if (!(img->hdr.flags & CKPT_IMG_F_SESSION_LEADER) ||
	    (root && !t->roots_get_terminal))
		return;
	if (setsid() < 0) {
		fprintf(stderr, "ckpt_restart: %s: process %d led its session; "
			"cannot make a new one: %s\n", img->path,
			img->hdr.vpid, strerror(errno));
		return;
	}
	/* another session's terminal stays there: expected for non-roots */
	if ((img->hdr.flags & CKPT_IMG_F_CTTY) && tty >= 0 &&
	    ioctl(tty, TIOCSCTTY, 0) < 0 && (root || own))
		fprintf(stderr, "ckpt_restart: %s: cannot make the terminal on "
			"fd %d the controlling terminal of process %d: %s\n",
			img->path, tty, img->hdr.vpid, strerror(errno));
}

/* In the new process: become image i. Never returns. */
static void __attribute__((noreturn)) become(struct tree *t, int i)
{
	int r;

	/* before its pid is known: no process goes on before this is done */
	if (restart_unix_dgram_refill_as(t->plan, t->imgs[i].hdr.vpid) < 0) {
		fail_plan(t);
		_exit(1);
	}
	__atomic_store_n(&t->plan->procs[i].real_pid, getpid(),
			 __ATOMIC_RELEASE);
	make_session(t, i);
	if (fork_children(t, i) < 0) {
		fail_plan(t);
		_exit(1);
	}
	r = wait_for_go(t->plan);
	if (r < 0) {
		if (r == -ETIMEDOUT)
			fprintf(stderr, "ckpt_restart: %s: the other processes "
				"were not set up within %d s\n",
				t->imgs[i].path, GO_TIMEOUT_MS / 1000);
		_exit(1);
	}
	exec_image(t, i);
	fail_plan(t);
	_exit(1);
}

/* Fork every image whose parent is image i (-1: the roots). */
static int fork_children(struct tree *t, int i)
{
	for (int c = 0; c < t->n; c++) {
		pid_t pid;

		if (t->parent[c] != i)
			continue;
		fflush(NULL);
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "ckpt_restart: %s: fork failed: %s\n",
				t->imgs[c].path, strerror(errno));
			return -errno;
		}
		if (pid == 0)
			become(t, c);
	}
	return 0;
}

/* The process that forked: wait until every process wrote its pid. */
static int give_go(struct tree *t)
{
	for (int ms = 0; ms < GO_TIMEOUT_MS; ms++) {
		if (__atomic_load_n(&t->plan->failed, __ATOMIC_ACQUIRE))
			return -ECANCELED;
		if (all_known(t->plan)) {
			__atomic_store_n(&t->plan->go, 1, __ATOMIC_RELEASE);
			return 0;
		}
		sleep_1ms();
	}
	fprintf(stderr, "ckpt_restart: the restored processes were not all "
		"forked within %d s\n", GO_TIMEOUT_MS / 1000);
	fail_plan(t);
	return -ETIMEDOUT;
}

static int exit_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

/* The root that ckpt_launch started (CKPT_IMG_F_LAUNCHED), or -1: the
 * other roots are daemons, orphaned before the checkpoint. */
static int launched_root(const struct tree *t)
{
	for (int i = 0; i < t->n; i++)
		if (t->parent[i] < 0 &&
		    (t->imgs[i].hdr.flags & CKPT_IMG_F_LAUNCHED))
			return i;
	return -1;
}

/*
 * Several roots: the program ckpt_launch started is the one waited for,
 * as ckpt_launch (which became it) was; daemons it left behind go on
 * after ckpt_restart returns, as they did after the program ended before
 * (gpg-agent, an ssh-agent, a server started with setsid). Without such
 * a root among the images (an older libckpt, a subset of the images),
 * all of them are waited for (no timeout: they are the restarted
 * programs) and the first failure's status is returned.
 */
static int wait_for_roots(struct tree *t)
{
	int status, first_failure = 0, launched = launched_root(t);
	pid_t pid, launched_pid = 0;

	for (int fd = t->plan_fd; fd < t->keep_fd_end; fd++)
		close(fd);
	if (launched >= 0)
		launched_pid = __atomic_load_n(
			&t->plan->procs[launched].real_pid, __ATOMIC_ACQUIRE);
	for (;;) {
		pid = waitpid(-1, &status, 0);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break;
		if (launched_pid > 0 && pid == launched_pid)
			return exit_status(status);
		if (exit_status(status) && !first_failure)
			first_failure = exit_status(status);
	}
	return first_failure;
}

int root_wants_terminal(const struct ckpt_image *root)
{
	const uint64_t leader = CKPT_IMG_F_SESSION_LEADER | CKPT_IMG_F_CTTY;
	int tty = restart_terminal();
	pid_t sid;

	if ((root->hdr.flags & leader) != leader || tty < 0)
		return 0;
	return ioctl(tty, TIOCGSID, &sid) < 0;
}

static int count_roots(const struct tree *t, int *root)
{
	int n = 0;

	for (int i = 0; i < t->n; i++)
		if (t->parent[i] < 0) {
			*root = i;
			n++;
		}
	return n;
}

int restart_tree(struct ckpt_image *imgs, int n, const char *coord,
		 const char *ckpt_dir)
{
	struct tree t = {
		.imgs = imgs, .n = n, .coord = coord, .ckpt_dir = ckpt_dir,
	};
	int root = -1, single, r;

	t.parent = calloc(n, sizeof(*t.parent));
	if (!t.parent) {
		fprintf(stderr, "ckpt_restart: out of memory\n");
		return 1;
	}
	if (build_tree(&t) || create_plan(&t))
		return 1;
	r = restart_pipes_create(imgs, n, t.plan, &t.keep_fd_end);
	if (r == 0)
		r = restart_sockets_create(imgs, n, t.plan, &t.keep_fd_end);
	if (r == 0)
		r = restart_listeners_create(imgs, n, t.plan, &t.keep_fd_end);
	if (r == 0)
		r = restart_unix_backlog_create(imgs, n, t.plan,
						&t.keep_fd_end);
	if (r == 0)
		r = restart_tcp_create(imgs, n, t.plan, &t.keep_fd_end);
	if (r == 0)
		r = restart_fifos_create(imgs, n, t.plan, &t.keep_fd_end);
	if (r == 0)
		r = restart_files_create(imgs, n, t.parent, t.plan,
					 &t.keep_fd_end);
	if (r == 0)
		r = restart_deleted_files_create(imgs, n, t.plan,
						 &t.keep_fd_end);
	if (r == 0)
		r = restart_shm_create(imgs, n, t.plan, &t.keep_fd_end);
	restart_deleted_files_release();
	if (r == 0)
		r = restart_ptys_create(imgs, n, t.plan, &t.keep_fd_end);
	if (r == 0)	/* last: a queued message may carry any of the above */
		r = restart_unix_dgram_create(imgs, n, t.plan, &t.keep_fd_end);
	if (r < 0 || check_kept_range(&t))
		return 1;
	single = count_roots(&t, &root) == 1;
	t.roots_get_terminal = single && root_wants_terminal(&imgs[root]);
	/* a process group leader cannot make a session: fork the root then */
	if (single && !(t.roots_get_terminal && getpgid(0) == getpid())) {
		/* We become the root: our caller waits for the program. */
		if (restart_unix_dgram_refill_as(t.plan, imgs[root].hdr.vpid))
			return 1;
		__atomic_store_n(&t.plan->procs[root].real_pid, getpid(),
				 __ATOMIC_RELEASE);
		make_session(&t, root);
		if (fork_children(&t, root) < 0 || give_go(&t) < 0) {
			fail_plan(&t);
			return 1;
		}
		exec_image(&t, root);
		fail_plan(&t);
		return 1;
	}
	if (fork_children(&t, -1) < 0 || give_go(&t) < 0) {
		fail_plan(&t);
		wait_for_roots(&t);
		return 1;
	}
	return wait_for_roots(&t);
}
