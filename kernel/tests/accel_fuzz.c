// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Throws random and hostile ioctl arguments at /dev/ckpt_accel, with a
 * thread that keeps changing the mappings being walked and children that
 * exit while they are the target. Passes if every call returns a sane
 * result; the guest's init then checks dmesg for oops/warning/BUG/leak.
 * Usage: accel_fuzz SECONDS SEED [--drop]  (--drop: run as uid 65534)
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "accel_util.h"

static char *arena;			/* 64 MiB the churn thread reshapes */
#define ARENA (64UL << 20)
static atomic_int stop;
static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void *churn(void *unused)
{
	uint64_t r = 88172645463325252ULL;

	(void)unused;
	while (!atomic_load(&stop)) {
		size_t off, len;

		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		off = (r % (ARENA / PAGE)) * PAGE;
		len = ((r >> 20) % 64 + 1) * PAGE;
		if (off + len > ARENA)
			len = ARENA - off;
		switch ((r >> 40) % 6) {
		case 0:
			memset(arena + off, 1, len);
			break;
		case 1:
			madvise(arena + off, len, MADV_DONTNEED);
			break;
		case 2:
			mprotect(arena + off, len, PROT_READ);
			mprotect(arena + off, len, PROT_READ | PROT_WRITE);
			break;
		case 3:
			mmap(arena + off, len, PROT_READ | PROT_WRITE,
			     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			break;
		case 4:
			madvise(arena + off, 2UL << 20, MADV_HUGEPAGE);
			arena[off] = 2;
			break;
		default:
			munmap(arena + off, len);
			mmap(arena + off, len, PROT_READ | PROT_WRITE,
			     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		}
	}
	return NULL;
}

static char *ro_page, *guard_end;	/* read-only; last bytes before a hole */

static uint64_t hostile_pointer(void *good)
{
	static const uint64_t bad[] = {
		0, 1, 0xfff, 0xffffffff81000000ULL, 0xffff888000000000ULL,
		0x00007ffffffff000ULL, 0x0000800000000000ULL, ~0ULL, ~0ULL - 63,
	};

	switch (rnd() % 5) {
	case 0:
		return bad[rnd() % (sizeof(bad) / sizeof(bad[0]))];
	case 1:
		return (uintptr_t)ro_page;
	case 2:
		return (uintptr_t)guard_end - rnd() % 128;
	default:
		return (uintptr_t)good;
	}
}

static uint64_t hostile_addr(void)
{
	uint64_t a = (uintptr_t)arena;

	switch (rnd() % 6) {
	case 0:
		return rnd();
	case 1:
		return rnd() & ~(PAGE - 1);
	case 2:
		return a + (rnd() % (ARENA / PAGE)) * PAGE;
	case 3:
		return 0x00007ffffffff000ULL + (rnd() % 3) * PAGE;
	case 4:
		return 0;
	default:
		return a + (rnd() % ARENA);
	}
}

static struct ckpt_accel_run runs[4096];
static pid_t victim;

static void random_request(int fd)
{
	unsigned char big[8192];
	struct ckpt_accel_range *req = (void *)big;
	static const uint32_t sizes[] = { 0, 1, 63, 64, 65, 72, 4096, 4097,
		8192, 0xffffffffu };
	unsigned long cmd;
	long ret;

	memset(big, 0, sizeof(big));
	if (rnd() % 4 == 0)
		for (size_t i = 64; i < sizeof(big); i += 8)
			big[i] = rnd() % 3 == 0;
	req->size = rnd() % 3 ? 64 : sizes[rnd() % 10];
	req->pid = rnd() % 3 ? 0 : (int32_t[]){ -1, 1, 2, victim, getpid(),
		0x7fffffff, (int32_t)rnd() }[rnd() % 7];
	req->start = hostile_addr();
	req->end = rnd() % 4 ? req->start + (rnd() % 4096) * PAGE : hostile_addr();
	req->runs = hostile_pointer(runs);
	req->max_runs = rnd() % 3 ? rnd() % 4097 : (uint32_t)rnd();
	req->flags = rnd() % 2 ? rnd() % 4 : (uint32_t)rnd();
	switch (rnd() % 8) {
	case 0:
		cmd = rnd();
		break;
	case 1:
		cmd = _IOC(rnd() % 4, CKPT_ACCEL_IOC_MAGIC, rnd() % 8,
			   rnd() % 512);
		break;
	case 2:
		cmd = CKPT_ACCEL_IOC_VERSION;
		break;
	case 3: case 4:
		cmd = CKPT_ACCEL_IOC_POPULATED;
		break;
	default:
		cmd = CKPT_ACCEL_IOC_DIRTY;
	}
	ret = ioctl(fd, cmd, (void *)(uintptr_t)hostile_pointer(big));
	if (ret < -1 || ret > (long)CKPT_ACCEL_MAX_RUNS) {
		printf("FAIL fuzz: ioctl %#lx returned %ld\n", cmd, ret);
		exit(1);
	}
}

/* A target that exits while it is walked. */
static pid_t spawn_victim(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		char *p = mmap(NULL, 32UL << 20, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED)
			memset(p, 3, 32UL << 20);
		usleep(20000);
		_exit(0);
	}
	return pid;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	long calls = 0;
	pthread_t th;
	double t0;
	int fd;

	rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 42;
	rng |= 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = open(CKPT_ACCEL_DEVICE, O_RDWR);
	if (argc > 3 && !strcmp(argv[3], "--drop") &&
	    (setgid(65534) || setuid(65534))) {
		printf("FAIL fuzz: setuid 65534: %s\n", strerror(errno));
		return 1;
	}
	arena = mmap(NULL, ARENA, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro_page = mmap(NULL, 2 * PAGE, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	guard_end = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || arena == MAP_FAILED || ro_page == MAP_FAILED ||
	    guard_end == MAP_FAILED) {
		printf("FAIL fuzz: setup: %s\n", strerror(errno));
		return 1;
	}
	munmap(guard_end + PAGE, PAGE);
	guard_end += PAGE;
	pthread_create(&th, NULL, churn, NULL);
	t0 = now_s();
	while (now_s() - t0 < seconds) {
		if (calls % 200 == 0) {
			if (victim > 0)
				waitpid(victim, NULL, 0);
			victim = spawn_victim();
		}
		random_request(fd);
		calls++;
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	if (victim > 0)
		waitpid(victim, NULL, 0);
	printf("PASS fuzz: %ld calls in %.0f s, seed %llu\n", calls, seconds,
	       (unsigned long long)rng);
	return 0;
}
