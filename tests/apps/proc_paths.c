/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proc_paths ITER DELAY_MS: a parent and a child that look at each other
 * through /proc with the pids they stored at start.
 *
 * On each of ITER steps the parent checks, by its stored pids P and C:
 * /proc/P/status (open) and /proc/C/status (fopen) show Pid, Tgid and
 * PPid equal to the stored pids, no real-time signal caught, ignored or
 * pending (the checkpointer's is hidden; SigBlk is left out: a process
 * stopped for a checkpoint blocks everything), and C is not stopped; /proc/C/cmdline and comm
 * are ours; readlink /proc/P/exe equals /proc/self/exe; stat /proc/P is
 * the directory /proc/self points to; readlink /proc/self says P;
 * /proc/self/stat and /proc/self/task/<tid>/status carry the virtual ids.
 * Two descriptors opened at start (/proc/self/status and
 * /proc/C/comm) are read again from offset 0. The child checks its
 * own status. Prints "start P C", "step I", last "OK proc paths"; any
 * mismatch prints "FAIL ..." and exits 1.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "app_util.h"

#define REALTIME_BITS (~0ULL << 33)	/* signals 34..64 */

static const char *who = "parent";

static void fail(const char *what, long got, long want)
{
	say("FAIL %s: %s: got %ld, want %ld", who, what, got, want);
	exit(1);
}

static void fail_text(const char *what, const char *got, const char *want)
{
	say("FAIL %s: %s: got '%s', want '%s'", who, what, got, want);
	exit(1);
}

static size_t read_fd(int fd, char *buf, size_t len, const char *what)
{
	size_t have = 0;
	ssize_t n;

	while (have < len - 1 &&
	       (n = pread(fd, buf + have, len - 1 - have, have)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail_text("read", what, strerror(errno));
		have += n;
	}
	buf[have] = 0;
	return have;
}

static size_t read_path(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n;

	if (fd < 0)
		fail_text("open", path, strerror(errno));
	n = read_fd(fd, buf, len, path);
	close(fd);
	return n;
}

static void fopen_path(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		fail_text("fopen", path, strerror(errno));
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
}

static const char *field(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p += !!p)
		if (!strncmp(p, name, n) && p[n] == ':')
			return p + n + 1;
	fail_text("no field in status", name, "");
	return NULL;
}

static void expect_id(const char *text, const char *name, long want)
{
	long got = strtol(field(text, name), NULL, 10);

	if (got != want)
		fail(name, got, want);
}

static void expect_masks_clean(const char *text, const char *what)
{
	static const char *const masks[] = {
		"SigPnd", "ShdPnd", "SigIgn", "SigCgt",
	};

	for (size_t i = 0; i < sizeof(masks) / sizeof(*masks); i++) {
		unsigned long long m = strtoull(field(text, masks[i]), NULL,
						16);

		if (m & REALTIME_BITS)
			fail_text(what, masks[i], "no real-time signal");
	}
}

static void check_status(const char *text, pid_t pid, pid_t tgid,
			 pid_t ppid, const char *what)
{
	expect_id(text, "Pid", pid);
	expect_id(text, "Tgid", tgid);
	expect_id(text, "PPid", ppid);
	expect_id(text, "NSpid", pid);
	expect_masks_clean(text, what);
}

/* The child: its own view only. */
static void child_loop(pid_t parent)
{
	char path[64], text[8192];

	who = "child";
	for (;;) {
		read_path("/proc/self/status", text, sizeof(text));
		check_status(text, getpid(), getpid(), parent,
			     "child /proc/self/status");
		snprintf(path, sizeof(path), "/proc/%d/status", getpid());
		fopen_path(path, text, sizeof(text));
		check_status(text, getpid(), getpid(), parent, path);
		if (getppid() != parent)
			fail("getppid", getppid(), parent);
		sleep_ms(20);
	}
}

static void check_links(pid_t self)
{
	char path[64], a[4096], b[4096];
	struct stat s1, s2;
	ssize_t n;

	n = readlink("/proc/self", a, sizeof(a) - 1);
	a[n > 0 ? n : 0] = 0;
	if (atol(a) != self)
		fail_text("readlink /proc/self", a, "our stored pid");
	snprintf(path, sizeof(path), "/proc/%d/exe", self);
	n = readlink(path, a, sizeof(a) - 1);
	a[n > 0 ? n : 0] = 0;
	n = readlink("/proc/self/exe", b, sizeof(b) - 1);
	b[n > 0 ? n : 0] = 0;
	if (strcmp(a, b))
		fail_text(path, a, b);
	snprintf(path, sizeof(path), "/proc/%d", self);
	if (stat(path, &s1) < 0 || stat("/proc/self", &s2) < 0)
		fail_text("stat", path, strerror(errno));
	if (s1.st_ino != s2.st_ino)
		fail("stat /proc/<stored pid> is another process", s1.st_ino,
		     s2.st_ino);
}

static void check_stat(pid_t self)
{
	char text[2048], *p;
	long pid, ppid, pgrp;

	read_path("/proc/self/stat", text, sizeof(text));
	pid = atol(text);
	p = strrchr(text, ')');
	if (!p || sscanf(p + 2, "%*c %ld %ld", &ppid, &pgrp) != 2)
		fail_text("/proc/self/stat", text, "pid (comm) state ppid ...");
	if (pid != self)
		fail("/proc/self/stat pid", pid, self);
	if (ppid != getppid())
		fail("/proc/self/stat ppid", ppid, getppid());
	if (pgrp != getpgrp())
		fail("/proc/self/stat pgrp", pgrp, getpgrp());
}

static void check_thread(pid_t self)
{
	char path[96], text[8192];
	pid_t tid = syscall(SYS_gettid);

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	read_path(path, text, sizeof(text));
	check_status(text, tid, self, getppid(), path);
}

/* A forked child has our cmdline and comm (a restarted process shows
 * the comm it had and the cmdline the kernel gives it: both the same). */
static void check_same_file(const char *path, const char *ours)
{
	char a[4096], b[4096];
	size_t na = read_path(path, a, sizeof(a)), nb;

	nb = read_path(ours, b, sizeof(b));
	if (na != nb || memcmp(a, b, na))
		fail_text(path, a, b);
}

static void check_child(pid_t self, pid_t child)
{
	char path[64], text[8192];
	const char *state;

	snprintf(path, sizeof(path), "/proc/%d/status", child);
	fopen_path(path, text, sizeof(text));
	check_status(text, child, child, self, path);
	state = field(text, "State");
	while (*state == '\t' || *state == ' ')
		state++;
	if (*state == 'T' || *state == 't' || *state == 'Z')
		fail_text(path, "State is stopped or dead: the original?",
			  "running");
	snprintf(path, sizeof(path), "/proc/%d/cmdline", child);
	check_same_file(path, "/proc/self/cmdline");
	snprintf(path, sizeof(path), "/proc/%d/comm", child);
	check_same_file(path, "/proc/self/comm");
	snprintf(path, sizeof(path), "/proc/%d/fd", child);
	if (access(path, R_OK) < 0)
		fail_text("access", path, strerror(errno));
}

/* Descriptors opened before the checkpoint, read again after it. */
static void check_kept(int status_fd, int comm_fd, pid_t self)
{
	char text[8192], comm[64];
	size_t n;

	read_fd(status_fd, text, sizeof(text), "kept /proc/self/status");
	check_status(text, self, self, getppid(), "kept /proc/self/status");
	n = read_fd(comm_fd, text, sizeof(text), "kept /proc/<child>/comm");
	if (n != read_path("/proc/self/comm", comm, sizeof(comm)) ||
	    memcmp(text, comm, n))
		fail_text("kept /proc/<child>/comm", text, comm);
}

int main(int argc, char **argv)
{
	unsigned long iters, delay;
	char path[64], text[8192];
	int status_fd, comm_fd, status;
	pid_t self = getpid(), child;

	if (argc != 3)
		die("proc_paths", "usage: proc_paths ITER DELAY_MS");
	iters = parse_ulong("proc_paths", "ITER", argv[1], 1, 100000);
	delay = parse_ulong("proc_paths", "DELAY_MS", argv[2], 0, 10000);
	read_path("/proc/self/status", text, sizeof(text));
	check_status(text, self, self, getppid(), "/proc/self/status at start");
	child = fork();
	if (child < 0)
		die("proc_paths", "fork: %s", strerror(errno));
	if (child == 0)
		child_loop(self);
	status_fd = open("/proc/self/status", O_RDONLY);
	snprintf(path, sizeof(path), "/proc/%d/comm", child);
	comm_fd = open(path, O_RDONLY);
	if (status_fd < 0 || comm_fd < 0)
		die("proc_paths", "open: %s", strerror(errno));
	say("start %d %d", self, child);
	for (unsigned long i = 1; i <= iters; i++) {
		snprintf(path, sizeof(path), "/proc/%d/status", self);
		read_path(path, text, sizeof(text));
		check_status(text, self, self, getppid(), path);
		check_child(self, child);
		check_links(self);
		check_stat(self);
		check_thread(self);
		check_kept(status_fd, comm_fd, self);
		say("step %lu", i);
		sleep_ms(delay);
	}
	kill(child, SIGTERM);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGTERM)
		fail("child status", status, SIGTERM);
	say("OK proc paths");
	return 0;
}
