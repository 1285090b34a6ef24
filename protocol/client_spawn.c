// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Starting a coordinator on demand. The coordinator is double-forked into
 * its own session so it never becomes the application's child (the
 * application would see an unknown SIGCHLD or reap it by accident), and it
 * reports "ready" or its error through a pipe (--notify-fd), so we wait
 * for an event instead of polling connect().
 *
 * Raw clone() instead of fork(): fork() runs atfork handlers that take the
 * malloc lock, which a suspended application thread may hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/coord_client.h"
#include "client_internal.h"

#define SPAWN_MAX_ARGS	32
#define SPAWN_MAX_ENV	1024	/* 8 KiB of stack; more entries are dropped */
#define NOTIFY_FD	3

extern char **environ;

struct spawn_plan {
	const char *path;
	char *argv[SPAWN_MAX_ARGS];
	char notify_fd_arg[16];
	int notify_w;
};

static pid_t raw_fork(int exit_signal)
{
	return (pid_t)syscall(SYS_clone, (unsigned long)exit_signal, 0UL,
			      NULL, NULL, 0UL);
}

/* Tell the spawning process why we could not start, then die. */
static void child_fail(int fd, int err, const char *path, const char *what)
{
	char line[1024];
	struct ckpt_cc_str s;

	ckpt_cc_str_init(&s, line, sizeof(line));
	ckpt_cc_str_add(&s, "error ");
	ckpt_cc_str_add_u64(&s, (uint64_t)err);
	ckpt_cc_str_add(&s, " ckpt: cannot ");
	ckpt_cc_str_add(&s, what);
	ckpt_cc_str_add(&s, " coordinator ");
	ckpt_cc_str_add(&s, path);
	ckpt_cc_str_add(&s, ": errno ");
	ckpt_cc_str_add_u64(&s, (uint64_t)err);
	ckpt_cc_str_add(&s, "\n");
	if (write(fd, line, s.len) < 0)
		_exit(127);
	_exit(127);
}

/* The coordinator must not run under libckpt itself. */
static void build_env(char **envp, size_t cap)
{
	size_t n = 0;
	char **e;

	for (e = environ; e && *e && n + 1 < cap; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
			envp[n++] = *e;
	envp[n] = NULL;
}

static void close_other_fds(void)
{
	int fd;

	if (syscall(SYS_close_range, NOTIFY_FD + 1, ~0U, 0) == 0)
		return;
	for (fd = NOTIFY_FD + 1; fd < 4096; fd++)
		close(fd);
}

/* In the grandchild: stdio on /dev/null, clean fds and mask, exec. */
static void exec_coordinator(struct spawn_plan *plan)
{
	char *envp[SPAWN_MAX_ENV];
	sigset_t none;
	int null_fd, fd;

	sigemptyset(&none);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, _NSIG / 8);
	fd = plan->notify_w == NOTIFY_FD ? NOTIFY_FD
					 : dup2(plan->notify_w, NOTIFY_FD);
	if (fd < 0 || fcntl(NOTIFY_FD, F_SETFD, 0) < 0)
		_exit(127);
	null_fd = open("/dev/null", O_RDWR);
	if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 ||
	    dup2(null_fd, 2) < 0)
		child_fail(NOTIFY_FD, errno, plan->path, "open /dev/null for");
	close_other_fds();
	build_env(envp, SPAWN_MAX_ENV);
	/* the system call itself: inside libckpt, execve() is the wrapper
	 * that puts LD_PRELOAD back, and a coordinator running libckpt
	 * would look for a coordinator, start one, and so on */
	syscall(SYS_execve, plan->path, plan->argv, envp);
	child_fail(NOTIFY_FD, errno, plan->path, "execute");
}

static int build_argv(struct spawn_plan *plan, const char *addr,
		      const char *const extra_args[])
{
	struct ckpt_cc_str s;
	size_t n = 0;

	ckpt_cc_str_init(&s, plan->notify_fd_arg, sizeof(plan->notify_fd_arg));
	ckpt_cc_str_add_u64(&s, NOTIFY_FD);
	plan->argv[n++] = (char *)plan->path;
	plan->argv[n++] = (char *)"--coord";
	plan->argv[n++] = (char *)addr;
	plan->argv[n++] = (char *)"--notify-fd";
	plan->argv[n++] = plan->notify_fd_arg;
	for (; extra_args && *extra_args; extra_args++) {
		if (n + 1 >= SPAWN_MAX_ARGS)
			return -E2BIG;
		plan->argv[n++] = (char *)*extra_args;
	}
	plan->argv[n] = NULL;
	return 0;
}

/* Fork twice; the middle child exits at once so the coordinator is
 * re-parented and never our child. Exit signal 0: no SIGCHLD for the
 * application, reaped with __WALL. */
static int fork_detached(struct spawn_plan *plan)
{
	pid_t mid = raw_fork(0);
	int status;

	if (mid < 0)
		return -errno;
	if (mid == 0) {
		pid_t grand;

		setsid();
		grand = raw_fork(SIGCHLD);
		if (grand == 0)
			exec_coordinator(plan);
		_exit(grand < 0 ? 1 : 0);
	}
	while (waitpid(mid, &status, __WALL) < 0) {
		if (errno == ECHILD)	/* SIGCHLD ignored: auto-reaped */
			return 0;
		if (errno != EINTR)
			return -errno;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -ECHILD;
	return 0;
}

/* "ready" -> 0; "error <errno> <message>" -> report, -errno. */
static int parse_notify(const char *line)
{
	char *end;
	long err;

	if (strncmp(line, "ready", 5) == 0)
		return 0;
	if (strncmp(line, "error ", 6) != 0)
		return -EPROTO;
	err = strtol(line + 6, &end, 10);
	if (err <= 0 || err > 4095)
		err = EIO;
	while (*end == ' ')
		end++;
	/* EADDRINUSE: someone else started one first; the caller connects
	 * to that one, nothing to report. */
	if (err != EADDRINUSE && *end)
		ckpt_cc_report(end, "", "", "");
	return -(int)err;
}

static int wait_ready(int fd, int timeout_ms)
{
	int64_t deadline = ckpt_cc_deadline(timeout_ms);
	char line[1024];
	size_t got = 0;

	while (got + 1 < sizeof(line)) {
		ssize_t n;
		int r = ckpt_cc_wait_fd(fd, POLLIN, deadline);

		if (r < 0)
			return r;
		n = read(fd, line + got, sizeof(line) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
		if (memchr(line, '\n', got))
			break;
	}
	line[got] = '\0';
	if (got && line[got - 1] == '\n')
		line[got - 1] = '\0';
	if (!got)
		return -ECHILD;	/* died without a word */
	return parse_notify(line);
}

/*
 * Another coordinator won a start race for addr: it holds the lock but may
 * not listen yet. Wait (bounded) until it answers; -EADDRINUSE then tells
 * the caller to connect to it. A 5 ms retry is fine for this rare case.
 */
static int wait_for_winner(const char *addr, int64_t deadline)
{
	const struct timespec pause = { .tv_nsec = 5 * 1000 * 1000 };

	if (deadline < 0)
		deadline = ckpt_cc_deadline(10000);
	for (;;) {
		int64_t left = deadline - ckpt_cc_now_ms();
		int fd = ckpt_coord_connect(addr, left < 1 ? 1 : (int)left);

		if (fd >= 0) {
			close(fd);
			return -EADDRINUSE;
		}
		if (fd != -ENOENT && fd != -ECONNREFUSED)
			return fd;
		if (ckpt_cc_now_ms() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
	}
}

int ckpt_coord_spawn(const char *coordinator_path, const char *addr,
		     const char *const extra_args[], int timeout_ms)
{
	struct spawn_plan plan = { .path = coordinator_path };
	int64_t deadline = ckpt_cc_deadline(timeout_ms);
	int pipefd[2];
	int r;

	if (!coordinator_path || !addr || !addr[0])
		return -EINVAL;
	if (access(coordinator_path, X_OK) < 0)
		return -errno;
	r = build_argv(&plan, addr, extra_args);
	if (r < 0)
		return r;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	plan.notify_w = pipefd[1];
	r = fork_detached(&plan);
	close(pipefd[1]);
	if (r == 0)
		r = wait_ready(pipefd[0], timeout_ms);
	close(pipefd[0]);
	if (r == -EADDRINUSE)
		r = wait_for_winner(addr, deadline);
	return r;
}

/* The file backing the mapping that holds this code: libckpt.so inside an
 * application, the tool itself otherwise. Read from /proc/self/maps with
 * no allocation. */
static int find_own_object(char *out, size_t len)
{
	uintptr_t self = (uintptr_t)&find_own_object;
	char buf[4096], line[4096 + 256];
	size_t ll = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	int r = -ENOENT;

	if (fd < 0)
		return -errno;
	while (r == -ENOENT && (n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n && r == -ENOENT; i++) {
			unsigned long lo, hi;
			char *p, *end;

			if (buf[i] != '\n') {
				if (ll + 1 < sizeof(line))
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = '\0';
			ll = 0;
			lo = strtoul(line, &end, 16);
			if (*end != '-')
				continue;
			hi = strtoul(end + 1, &end, 16);
			if (self < lo || self >= hi)
				continue;
			p = strchr(line, '/');
			if (!p)
				break;
			r = ckpt_cc_strlcpy(out, p, len) < len ? 0
							       : -ENAMETOOLONG;
		}
	}
	close(fd);
	return r;
}

/* ckpt_coordinator next to the running tool, else (inside an application)
 * PREFIX/bin/ckpt_coordinator relative to PREFIX/lib/ckpt/libckpt.so. */
static int find_coordinator(char *out, size_t len)
{
	char obj[4096];
	char *slash;
	int r;

	r = ckpt_install_path("ckpt_coordinator", out, len);
	if (r == 0 && access(out, X_OK) == 0)
		return 0;
	r = find_own_object(obj, sizeof(obj));
	if (r < 0)
		return r;
	slash = strrchr(obj, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	r = ckpt_cc_path_join(obj, "../../bin/ckpt_coordinator", out, len);
	if (r < 0)
		return r;
	return access(out, X_OK) == 0 ? 0 : -errno;
}

int ckpt_coord_connect_or_spawn(const char *addr, int timeout_ms)
{
	char path[4096];
	int64_t deadline = ckpt_cc_deadline(timeout_ms);
	int fd, r, left;

	fd = ckpt_coord_connect(addr, timeout_ms);
	if (fd != -ENOENT && fd != -ECONNREFUSED)
		return fd;
	r = find_coordinator(path, sizeof(path));
	if (r < 0)
		return r;
	left = deadline < 0 ? -1 : (int)(deadline - ckpt_cc_now_ms());
	if (deadline >= 0 && left < 1)
		return -ETIMEDOUT;
	r = ckpt_coord_spawn(path, addr, NULL, left);
	if (r < 0 && r != -EADDRINUSE)
		return r;
	left = deadline < 0 ? -1 : (int)(deadline - ckpt_cc_now_ms());
	return ckpt_coord_connect(addr, left < 1 && deadline >= 0 ? 1 : left);
}
