// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The self-test's "restored program": freestanding code that mkimage puts
 * into an image in place of libckpt. The loader calls _start(args) as it
 * would call libckpt's restore entry; we check what the loader promised
 * and exit with the code mkimage chose. x86_64 (arch_prctl, fs).
 */
#include <linux/elf.h>
#include <linux/fcntl.h>
#include <linux/time.h>
#include <asm/prctl.h>
#include "ckpt/hash.h"
#include "ckpt/restart_args.h"
#include "syscall_arch.h"
#include "selftest.h"

static size_t length(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

static void say(int fd, const char *s)
{
	__syscall3(__NR_write, fd, (long)s, (long)length(s));
}

static __attribute__((noreturn)) void fail(unsigned check)
{
	char msg[] = "selftest: check 00 failed\n";

	msg[16] = '0' + check / 10 % 10;
	msg[17] = '0' + check % 10;
	say(2, msg);
	for (;;)
		__syscall1(__NR_exit_group, 3);
}

/* Version 1: no restart plan (one image); 2: a plan and its kept fds
 * (several images restarted together). */
static int kept_for_plan(const struct ckpt_restart_args *a, long fd)
{
	return a->version >= 2 && a->plan_fd >= 3 && fd >= a->plan_fd &&
	       fd < a->keep_fd_end;
}

static void check_args(const struct ckpt_restart_args *a)
{
	long fd;

	if (a->magic != CKPT_RESTART_ARGS_MAGIC || a->version < 1 ||
	    a->version > CKPT_RESTART_ARGS_VERSION || !a->image_path[0])
		fail(1);
	if (a->version >= 2 && (a->plan_fd < 3 ||
	    __syscall2(__NR_fcntl, a->plan_fd, F_GETFD) < 0))
		fail(1);
	if (__syscall2(__NR_fcntl, a->image_fd, F_GETFD) < 0)
		fail(2);
	for (fd = 3; fd < 256; fd++)
		if (fd != a->image_fd && !kept_for_plan(a, fd) &&
		    __syscall2(__NR_fcntl, fd, F_GETFD) != -9 /* EBADF */)
			fail(3);
	if (a->nloader_mappings < 1 ||
	    a->nloader_mappings > CKPT_LOADER_MAX_MAPPINGS)
		fail(8);
}

static void check_cpu(const struct ckpt_restart_args *a,
		      const struct st_params *p)
{
	if (a->current_xcr0 != p->xcr0)
		fail(38);
}

static int same_string(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* Address of a vdso symbol: st_value less the link address of the first
 * PT_LOAD (0 for today's vdsos; mkimage's old one is linked high). */
static uint64_t vdso_symbol(uint64_t base, const char *name)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
	const Elf64_Sym *sym;
	const char *str;
	uint64_t i, j, n, bias = 0;

	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			bias = ph[i].p_vaddr - ph[i].p_offset;
			break;
		}
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
		str = (const char *)(base + sh[sh[i].sh_link].sh_offset);
		n = sh[i].sh_size / sizeof(*sym);
		for (j = 0; j < n; j++)
			if (sym[j].st_value &&
			    same_string(str + sym[j].st_name, name))
				return base + sym[j].st_value - bias;
	}
	return 0;
}

static void *vdso_function(uint64_t vdso, const char *name)
{
	uint64_t fn = vdso_symbol(vdso, name);

	if (!fn)
		fail(7);
	return (void *)fn;
}

struct st_timeval {
	long s, us;
};

static int within_a_second(long a, long b)
{
	return a - b <= 1 && b - a <= 1 && a > 0;
}

/* Through the saved vdso's entry points (moved, or redirected to this
 * kernel's): every function answers like the kernel. */
static void check_vdso_calls(const struct st_params *p)
{
	int (*gettime)(long, struct timespec *);
	int (*getres)(long, struct timespec *);
	int (*gettimeofday)(struct st_timeval *, void *);
	long (*time)(long *);
	int (*getcpu)(unsigned *, unsigned *, void *);
	long (*bogus)(void);
	struct timespec a, b;
	struct st_timeval tv;
	unsigned cpu = ~0U, node = ~0U;

	gettime = vdso_function(p->vdso, "__vdso_clock_gettime");
	if (gettime(CLOCK_MONOTONIC, &a) ||
	    __syscall2(__NR_clock_gettime, CLOCK_MONOTONIC, (long)&b) ||
	    !within_a_second(a.tv_sec, b.tv_sec))
		fail(7);
	if (gettime(CLOCK_REALTIME, &a) ||
	    __syscall2(__NR_clock_gettime, CLOCK_REALTIME, (long)&b) ||
	    !within_a_second(a.tv_sec, b.tv_sec))
		fail(31);
	gettimeofday = vdso_function(p->vdso, "__vdso_gettimeofday");
	if (gettimeofday(&tv, 0) || !within_a_second(tv.s, b.tv_sec) ||
	    tv.us < 0 || tv.us >= 1000000)
		fail(32);
	time = vdso_function(p->vdso, "time");	/* the weak alias */
	if (!within_a_second(time(0), b.tv_sec))
		fail(33);
	getcpu = vdso_function(p->vdso, "__vdso_getcpu");
	if (getcpu(&cpu, &node, 0) || cpu >= 8192 || node >= 8192)
		fail(34);
	getres = vdso_function(p->vdso, "__vdso_clock_getres");
	if (getres(CLOCK_MONOTONIC, &a) || a.tv_sec ||
	    a.tv_nsec <= 0 || a.tv_nsec > 10000000)
		fail(35);
	if (p->vdso_bogus) {
		bogus = vdso_function(p->vdso, "__vdso_bogus");
		if (bogus() != -38)	/* -ENOSYS, also as a long */
			fail(36);
	}
}

/* The old kernel's data pages: mapped, zero, so no pointer dangles. */
static void check_vvar_zero(const struct st_params *p)
{
	const uint64_t *q;
	unsigned i, j;

	for (i = 0; i < 2; i++) {
		if (!p->vvar_zero[i])
			continue;
		q = (const uint64_t *)p->vvar_zero[i];
		for (j = 0; j < 4096 / 8; j++)
			if (q[j])
				fail(37);
	}
}

static void check_process(const struct st_params *p)
{
	uint64_t mask = 0, fs = 0;
	/* The kernel never lets SIGKILL (9) and SIGSTOP (19) be blocked. */
	uint64_t unblockable = (1ULL << 8) | (1ULL << 18);

	if (__syscall4(__NR_rt_sigprocmask, 0, 0, (long)&mask, 8) ||
	    (mask | unblockable) != ~0ULL)
		fail(4);
	if (__syscall2(__NR_arch_prctl, ARCH_GET_FS, (long)&fs) || fs != p->tls)
		fail(5);
	/* The kernel's program break is the saved one again
	 * (restart/loader_exec.c, loader/regions.c), and it grows the heap
	 * in place. */
	if ((uint64_t)__syscall1(__NR_brk, 0) != p->brk_end ||
	    (uint64_t)__syscall1(__NR_brk, p->brk_end + 4096) !=
	    p->brk_end + 4096)
		fail(30);
	*(volatile char *)p->brk_end = 1;
	if (p->vdso && *(const uint32_t *)p->vdso != 0x464c457f) /* \x7fELF */
		fail(7);
	if (p->vdso) {
		check_vdso_calls(p);
		check_vvar_zero(p);
	}
}

static void check_memory(const struct st_params *p)
{
	uint32_t i;

	for (i = 0; i < p->nchecks && i < ST_MAX_CHECKS; i++)
		if (ckpt_hash64((const void *)p->checks[i].addr,
				p->checks[i].len, 0) != p->checks[i].hash)
			fail(10 + i);
}

/* What libckpt does once it has the args: drop the loader. */
static void unmap_loader(const struct ckpt_restart_args *a)
{
	uint32_t i;

	for (i = 0; i < a->nloader_mappings; i++)
		if (__syscall2(__NR_munmap, a->loader_mappings[i].start,
			       a->loader_mappings[i].end -
			       a->loader_mappings[i].start))
			fail(9);
}

__attribute__((noreturn, optimize("no-omit-frame-pointer")))
void _start(struct ckpt_restart_args *args)
{
	const struct st_params *p = (const struct st_params *)ST_PARAMS_ADDR;
	struct ckpt_restart_args a;

	/* With a frame pointer, rbp = entry rsp - 8: 16-aligned iff the
	 * loader called us with the ABI's alignment. */
	if ((uint64_t)__builtin_frame_address(0) % 16)
		fail(6);
	if (p->magic != ST_PARAMS_MAGIC)
		fail(0);
	__builtin_memcpy(&a, args, sizeof(a));
	check_args(&a);
	check_cpu(&a, p);
	check_process(p);
	check_memory(p);
	unmap_loader(&a);
	say(1, p->message);
	for (;;)
		__syscall1(__NR_exit_group, p->exit_code);
}
