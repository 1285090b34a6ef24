// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Functional test of /dev/ckpt_accel in the guest: version, populated
 * runs against pagemap (with resumption), dirty tracking against
 * soft-dirty, other processes and the uid check, and libckpt's wrappers
 * (libckpt-preload/accel.c is linked in). Prints one "PASS name" or
 * "FAIL name: why" per check; exits 1 if any failed.
 * Usage: accel_test [--absent]   (--absent: the module is not loaded)
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "accel_util.h"

#define MAXR 200000
static struct ckpt_accel_run ra[MAXR], rb[MAXR];
static int failures;

static void report(const char *name, int ok, const char *fmt, long v)
{
	if (ok) {
		printf("PASS %s\n", name);
		return;
	}
	printf("FAIL %s: ", name);
	printf(fmt, v);
	printf("\n");
	failures++;
}

static void test_version(int fd)
{
	struct ckpt_accel_version v;
	int ret = ioctl(fd, CKPT_ACCEL_IOC_VERSION, &v);

	report("version", ret == 0 && v.version == CKPT_ACCEL_VERSION &&
	       (v.ops & CKPT_ACCEL_OP_POPULATED) && (v.ops & CKPT_ACCEL_OP_DIRTY)
	       && v.range_size == sizeof(struct ckpt_accel_range),
	       "ioctl returned %ld or a wrong version", ret);
}

/* A 1 GiB sparse reservation touched in a pattern with runs of 1..5. */
static char *make_sparse(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	size_t i;

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_NOHUGEPAGE);
	for (i = 0; i < len / PAGE; i += 97)
		memset(p + i * PAGE, 1, (i % 5 + 1) * PAGE);
	p[len - 1] = 1;		/* the last page: a run at the range end */
	/* A hole in the middle VMA split: different protections. */
	mprotect(p + 300 * PAGE, 10 * PAGE, PROT_READ);
	return p;
}

static void test_populated(int fd, int pm)
{
	size_t len = 1UL << 30;
	char *p = make_sparse(len);
	uint64_t s = (uintptr_t)p, e = s + len;
	long na, nb, nc;

	if (!p) {
		report("populated", 0, "mmap 1 GiB failed: %ld", errno);
		return;
	}
	na = pagemap_runs(pm, s, e, PM_PRESENT | PM_SWAP, ra, MAXR);
	nb = module_runs(fd, CKPT_ACCEL_IOC_POPULATED, s, e, 0, rb, MAXR, MAXR);
	report("populated-equals-pagemap", na > 1000 && same_runs(ra, na, rb, nb),
	       "module gave %ld runs", nb);
	nc = module_runs(fd, CKPT_ACCEL_IOC_POPULATED, s, e, 0, rb, MAXR, 7);
	report("populated-resume-max7", same_runs(ra, na, rb, nc),
	       "resumed walk gave %ld runs", nc);
	/* A sub-range that starts and ends inside runs. */
	na = pagemap_runs(pm, s + 98 * PAGE, s + 1000 * PAGE,
			  PM_PRESENT | PM_SWAP, ra, MAXR);
	nb = module_runs(fd, CKPT_ACCEL_IOC_POPULATED, s + 98 * PAGE,
			 s + 1000 * PAGE, 0, rb, MAXR, 3);
	report("populated-subrange", same_runs(ra, na, rb, nb),
	       "module gave %ld runs", nb);
	/* Through libckpt's wrapper. */
	nb = ckpt_accel_populated_runs(s, e, rb, MAXR);
	na = pagemap_runs(pm, s, e, PM_PRESENT | PM_SWAP, ra, MAXR);
	report("libckpt-populated-runs", same_runs(ra, na, rb, nb),
	       "wrapper returned %ld", nb);
	munmap(p, len);
}

static long dirty_runs(int fd, uint64_t s, uint64_t e, unsigned int flags)
{
	return module_runs(fd, CKPT_ACCEL_IOC_DIRTY, s, e, flags, rb, MAXR, 5);
}

static void clear_soft_dirty(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);

	if (fd >= 0) {
		if (write(fd, "4", 1) != 1)
			perror("accel_test: /proc/self/clear_refs");
		close(fd);
	}
}

static void test_dirty(int fd, int pm)
{
	size_t len = 64UL << 20, i;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t s = (uintptr_t)p, e = s + len;
	struct ckpt_accel_range req = { .size = sizeof(req), .start = s,
		.end = e, .flags = CKPT_ACCEL_DIRTY_CLEAR |
		CKPT_ACCEL_DIRTY_NO_REPORT };
	long n, na;

	madvise(p, len, MADV_NOHUGEPAGE);
	memset(p, 7, len);
	report("dirty-clear", ioctl(fd, CKPT_ACCEL_IOC_DIRTY, &req) == 0 &&
	       req.nr_pages == len / PAGE, "cleared %ld pages",
	       (long)req.nr_pages);
	n = dirty_runs(fd, s, e, 0);
	report("dirty-none-after-clear", n == 0, "%ld dirty runs", n);
	clear_soft_dirty();
	for (i = 0; i < len / PAGE; i += 13)
		p[i * PAGE + 5] = 9;
	p[PAGE * 1000] = p[PAGE * 1000];	/* a read-write of same value */
	n = dirty_runs(fd, s, e, CKPT_ACCEL_DIRTY_CLEAR);
	na = pagemap_runs(pm, s, e, PM_SOFT_DIRTY, ra, MAXR);
	report("dirty-equals-soft-dirty", n > 0 && same_runs(ra, na, rb, n),
	       "module gave %ld runs", n);
	n = dirty_runs(fd, s, e, 0);
	report("dirty-cleared-by-read", n == 0, "%ld runs remain", n);
	p[PAGE * 77] = 1;
	n = dirty_runs(fd, s, e, 0);
	report("dirty-one-page", n == 1 && rb[0].start == s + 77 * PAGE &&
	       rb[0].end == s + 78 * PAGE, "%ld runs", n);
	n = ckpt_accel_clear_dirty(s, e);
	report("libckpt-clear-dirty", n == 0, "returned %ld", n);
	n = ckpt_accel_dirty_runs(s, e, rb, MAXR, 0, NULL);
	report("libckpt-dirty-runs", n == 0, "returned %ld", n);
	munmap(p, len);
}

/* A child of the same uid is allowed; after setuid it may not touch us. */
static void test_other_process(int fd)
{
	char *p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct ckpt_accel_range req = { .size = sizeof(req), .runs =
		(uintptr_t)rb, .max_runs = 16 };
	int pipefd[2], status = 0;
	pid_t child;
	long ret;

	if (pipe(pipefd))
		return;
	child = fork();
	if (child == 0) {
		p[3 * PAGE] = 1;	/* only the child maps this page */
		if (write(pipefd[1], "x", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	char c;
	if (read(pipefd[0], &c, 1) != 1)
		c = 0;
	req.pid = child;
	req.start = (uintptr_t)p;
	req.end = (uintptr_t)p + 16 * PAGE;
	ret = ioctl(fd, CKPT_ACCEL_IOC_POPULATED, &req);
	report("other-pid-same-uid", ret == 1 && rb[0].start == req.start +
	       3 * PAGE, "ioctl returned %ld", ret < 0 ? -errno : ret);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(pipefd[0]);

	child = fork();
	if (child == 0) {
		struct ckpt_accel_range r = req;
		int code = 0;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		r.pid = getppid();
		if (ioctl(fd, CKPT_ACCEL_IOC_POPULATED, &r) != -1 ||
		    errno != EPERM)
			code |= 1;
		r.pid = 1;
		if (ioctl(fd, CKPT_ACCEL_IOC_DIRTY, &r) != -1 || errno != EPERM)
			code |= 2;
		r.pid = 0;	/* itself: allowed */
		if (ioctl(fd, CKPT_ACCEL_IOC_POPULATED, &r) < 0)
			code |= 4;
		_exit(code);
	}
	waitpid(child, &status, 0);
	report("uid-check", WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "unprivileged child exit code %ld",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	munmap(p, 16 * PAGE);
}

static int test_absent(void)
{
	int ret = ckpt_accel_open();

	report("fallback-when-absent", ret == -ENOENT &&
	       !ckpt_accel_available() &&
	       ckpt_accel_populated_runs(0, PAGE, rb, 1) == -ENODEV,
	       "ckpt_accel_open returned %ld", ret);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int fd, pm, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--absent"))
		return test_absent();
	fd = open(CKPT_ACCEL_DEVICE, O_RDWR);
	pm = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0 || pm < 0) {
		printf("FAIL open: %s or /proc/self/pagemap: %s\n",
		       CKPT_ACCEL_DEVICE, strerror(errno));
		return 1;
	}
	ret = ckpt_accel_open();
	report("libckpt-probe", ret == 0 && ckpt_accel_available(),
	       "ckpt_accel_open returned %ld", ret);
	test_version(fd);
	test_populated(fd, pm);
	test_dirty(fd, pm);
	test_other_process(fd);
	return failures ? 1 : 0;
}
