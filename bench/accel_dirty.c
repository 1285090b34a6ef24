// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Benchmark: dirty-page tracking for incremental checkpoints. Each round
 * starts tracking a 256 MiB populated range, lets the "application"
 * write one page in ten, and collects the dirty runs, with
 *   - the module (hardware dirty bit: no write faults),
 *   - soft-dirty (/proc/self/clear_refs 4 + pagemap bit 55),
 *   - userfaultfd write-protect (a handler thread unprotects each page),
 *   - no tracking at all (the application's floor).
 * All three must agree on the dirty set. Prints times and ratios.
 * Usage: accel_dirty [MIB]
 */
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "accel_util.h"

#define ROUNDS 3
#define STRIDE 10
#define MAXR (1u << 18)
static struct ckpt_accel_run ref[MAXR], got[MAXR];
static char *area;
static size_t len;
static unsigned char round_byte;

struct method {
	const char *name;
	int (*start)(void);
	long (*collect)(void);
	double t_start, t_write, t_collect;
};

static void app_writes(void)
{
	size_t i;

	round_byte++;
	for (i = 0; i < len / PAGE; i += STRIDE)
		area[i * PAGE + 64] = round_byte;
}

/* --- the module --- */
static int accel_fd;

static int module_start(void)
{
	struct ckpt_accel_range r = { .size = sizeof(r),
		.start = (uintptr_t)area, .end = (uintptr_t)area + len,
		.flags = CKPT_ACCEL_DIRTY_CLEAR | CKPT_ACCEL_DIRTY_NO_REPORT };

	return ioctl(accel_fd, CKPT_ACCEL_IOC_DIRTY, &r) < 0 ? -errno : 0;
}

static long module_collect(void)
{
	return module_runs(accel_fd, CKPT_ACCEL_IOC_DIRTY, (uintptr_t)area,
			   (uintptr_t)area + len, 0, got, MAXR, MAXR);
}

/* --- soft-dirty --- */
static int pagemap_fd;

static int soft_dirty_start(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	int ok;

	if (fd < 0)
		return -errno;
	ok = write(fd, "4", 1) == 1;
	close(fd);
	return ok ? 0 : -EIO;
}

static long soft_dirty_collect(void)
{
	return pagemap_runs(pagemap_fd, (uintptr_t)area, (uintptr_t)area + len,
			    PM_SOFT_DIRTY, got, MAXR);
}

/* clear_refs 4 is accepted even where soft-dirty is compiled out. */
static int soft_dirty_works(void)
{
	uint64_t e = 0;

	if (soft_dirty_start() < 0)
		return 0;
	area[0] = 2;
	if (pread(pagemap_fd, &e, 8, (uintptr_t)area / PAGE * 8) != 8)
		return 0;
	return !!(e & PM_SOFT_DIRTY);
}

/* --- userfaultfd write-protect --- */
static int uffd = -1;
static pthread_t uffd_thread;
static atomic_int uffd_stop;
static uint64_t *fault_pages;
static atomic_size_t nfaults;

static int wp_range(uint64_t start, uint64_t length, int protect)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = start, .len = length },
		.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) ? -errno : 0;
}

static void *uffd_handler(void *unused)
{
	struct uffd_msg msg;

	(void)unused;
	/* Blocking reads: the thread ends with the process. */
	while (!atomic_load(&uffd_stop)) {
		if (read(uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		uint64_t page = msg.arg.pagefault.address & ~(PAGE - 1);

		fault_pages[atomic_fetch_add(&nfaults, 1)] = page;
		wp_range(page, PAGE, 0);
	}
	return NULL;
}

static int uffd_setup(void)
{
	struct uffdio_api api = { .api = UFFD_API,
		.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)area, .len = len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg))
		return -errno;
	fault_pages = malloc(len / PAGE * sizeof(*fault_pages));
	if (!fault_pages)
		return -ENOMEM;
	return pthread_create(&uffd_thread, NULL, uffd_handler, NULL) ? -EAGAIN : 0;
}

static int uffd_start(void)
{
	atomic_store(&nfaults, 0);
	return wp_range((uintptr_t)area, len, 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static long uffd_collect(void)
{
	size_t n = atomic_load(&nfaults), i, nr = 0;

	qsort(fault_pages, n, sizeof(*fault_pages), cmp_u64);
	for (i = 0; i < n; i++)
		add_run(got, &nr, fault_pages[i], fault_pages[i] + PAGE);
	return nr;
}

/* --- no tracking --- */
static int none_start(void) { return 0; }
static long none_collect(void) { return 0; }

static void expected_runs(long *n)
{
	size_t i, nr = 0;

	for (i = 0; i < len / PAGE; i += STRIDE)
		add_run(ref, &nr, (uintptr_t)area + i * PAGE,
			(uintptr_t)area + (i + 1) * PAGE);
	*n = nr;
}

static int run_method(struct method *m, long nref)
{
	int round, rounds = ROUNDS;

	/* One slow round says enough: each first write is a round trip. */
	if (m->start == uffd_start)
		rounds = 1;
	m->t_start = m->t_write = m->t_collect = 1e9;
	for (round = 0; round < rounds; round++) {
		double t0 = now_s(), t1, t2, t3;
		long n;
		int err = m->start();

		t1 = now_s();
		app_writes();
		t2 = now_s();
		n = m->collect();
		t3 = now_s();
		if (err || n < 0) {
			printf("FAIL bench-dirty: %s: start %d collect %ld\n",
			       m->name, err, n);
			return -1;
		}
		if (m->collect != none_collect && !same_runs(ref, nref, got, n)) {
			printf("FAIL bench-dirty: %s found %ld dirty runs, "
			       "expected %ld\n", m->name, n, nref);
			return -1;
		}
		if (t1 - t0 < m->t_start) m->t_start = t1 - t0;
		if (t2 - t1 < m->t_write) m->t_write = t2 - t1;
		if (t3 - t2 < m->t_collect) m->t_collect = t3 - t2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct method ms[] = {
		{ "none", none_start, none_collect, 0, 0, 0 },
		{ "module", module_start, module_collect, 0, 0, 0 },
		{ "soft-dirty", soft_dirty_start, soft_dirty_collect, 0, 0, 0 },
		{ "uffd-wp", uffd_start, uffd_collect, 0, 0, 0 },
	};
	size_t nm = sizeof(ms) / sizeof(ms[0]), i;
	double mod_total = 0;
	long nref;

	setvbuf(stdout, NULL, _IOLBF, 0);
	len = (argc > 1 ? strtoul(argv[1], NULL, 0) : 256) << 20;
	area = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return 1;
	madvise(area, len, MADV_NOHUGEPAGE);
	memset(area, 1, len);
	expected_runs(&nref);
	accel_fd = open(CKPT_ACCEL_DEVICE, O_RDWR);
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY);
	if (accel_fd < 0)
		ms[1].name = NULL;
	if (!soft_dirty_works()) {
		printf("bench-dirty: soft-dirty unavailable in this kernel\n");
		ms[2].name = NULL;
	}
	if (uffd_setup() < 0) {
		printf("bench-dirty: userfaultfd write-protect unavailable: %s\n",
		       strerror(errno));
		ms[3].name = NULL;
	}
	for (i = 0; i < nm; i++) {
		double total;

		if (!ms[i].name)
			continue;
		if (run_method(&ms[i], nref))
			return 1;
		total = ms[i].t_start + ms[i].t_write + ms[i].t_collect;
		if (i == 1)
			mod_total = total;
		printf("bench-dirty: %zu MiB, 1 page in %d written: %-10s start "
		       "%7.2f ms, app writes %7.2f ms, collect %7.2f ms, total "
		       "%7.2f ms", len >> 20, STRIDE, ms[i].name,
		       ms[i].t_start * 1e3, ms[i].t_write * 1e3,
		       ms[i].t_collect * 1e3, total * 1e3);
		if (i > 1 && mod_total > 0)
			printf(", ratio to module %.1fx", total / mod_total);
		printf("\n");
	}
	if (!ms[1].name)
		printf("bench-dirty: no module: soft-dirty or uffd-wp is the "
		       "fallback where the kernel has them\n");
	atomic_store(&uffd_stop, 1);
	return 0;
}
