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

static void check_args(const struct ckpt_restart_args *a)
{
	long fd;

	if (a->magic != CKPT_RESTART_ARGS_MAGIC ||
	    a->version != CKPT_RESTART_ARGS_VERSION || !a->image_path[0])
		fail(1);
	if (__syscall2(__NR_fcntl, a->image_fd, F_GETFD) < 0)
		fail(2);
	for (fd = 3; fd < 256; fd++)
		if (fd != a->image_fd &&
		    __syscall2(__NR_fcntl, fd, F_GETFD) != -9 /* EBADF */)
			fail(3);
	if (a->nloader_mappings < 1 ||
	    a->nloader_mappings > CKPT_LOADER_MAX_MAPPINGS)
		fail(8);
}

static int same_string(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* The vdso is linked at 0, so section offsets are addresses from base. */
static uint64_t vdso_symbol(uint64_t base, const char *name)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
	const Elf64_Sym *sym;
	const char *str;
	uint64_t i, j, n;

	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
		str = (const char *)(base + sh[sh[i].sh_link].sh_offset);
		n = sh[i].sh_size / sizeof(*sym);
		for (j = 0; j < n; j++)
			if (sym[j].st_value &&
			    same_string(str + sym[j].st_name, name))
				return base + sym[j].st_value;
	}
	return 0;
}

/* The moved vdso finds its data pages: its clock agrees with the
 * kernel's within a second. */
static void check_vdso_clock(uint64_t vdso)
{
	int (*gettime)(long, struct timespec *);
	struct timespec a, b;
	uint64_t fn = vdso_symbol(vdso, "__vdso_clock_gettime");

	if (!fn)
		fail(7);
	gettime = (int (*)(long, struct timespec *))fn;
	if (gettime(CLOCK_MONOTONIC, &a) ||
	    __syscall2(__NR_clock_gettime, CLOCK_MONOTONIC, (long)&b))
		fail(7);
	if (a.tv_sec - b.tv_sec > 1 || b.tv_sec - a.tv_sec > 1 ||
	    a.tv_sec == 0)
		fail(7);
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
	/* Growing the saved break must fail honestly: the kernel's break is
	 * the loader's, below our heap (restart/loader_exec.c). */
	if ((uint64_t)__syscall1(__NR_brk, p->brk_end + 4096) >=
	    p->brk_end + 4096)
		fail(30);
	if (p->vdso && *(const uint32_t *)p->vdso != 0x464c457f) /* \x7fELF */
		fail(7);
	if (p->vdso)
		check_vdso_clock(p->vdso);
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
	check_process(p);
	check_memory(p);
	unmap_loader(&a);
	say(1, p->message);
	for (;;)
		__syscall1(__NR_exit_group, p->exit_code);
}
