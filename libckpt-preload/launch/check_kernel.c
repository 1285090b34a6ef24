// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_check: the kernel interfaces ckpt relies on or could use, each
 * probed by calling it the harmless way (a bad argument that only an
 * existing system call checks, our own process as the target).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

extern const unsigned int __rseq_size __attribute__((weak));

#define PM_SOFT_DIRTY	(1ULL << 55)

void check_kernel_version(struct check *c)
{
	struct utsname u;

	c->name = "kernel";
	c->available = uname(&u) == 0;
	if (!c->available) {
		snprintf(c->detail, sizeof(c->detail), "uname: %s",
			 strerror(errno));
		return;
	}
	snprintf(c->value, sizeof(c->value), "%s", u.release);
	snprintf(c->detail, sizeof(c->detail), "%s %s %s", u.sysname,
		 u.release, u.machine);
}

void check_rseq(struct check *c)
{
	/* No area and no length: EINVAL from a kernel that has rseq. */
	long r = syscall(SYS_rseq, NULL, 0, 0, 0);

	c->name = "rseq";
	c->available = !(r < 0 && errno == ENOSYS);
	if (!c->available) {
		snprintf(c->detail, sizeof(c->detail), "rseq(2) is missing");
		snprintf(c->without, sizeof(c->without), "nothing to restore: "
			 "glibc runs its threads without an rseq area");
		return;
	}
	snprintf(c->value, sizeof(c->value), "%u",
		 &__rseq_size ? __rseq_size : 0);
	snprintf(c->detail, sizeof(c->detail), "rseq(2) present; %s",
		 &__rseq_size && __rseq_size ?
		 "glibc registers an area for every thread, and a restart "
		 "registers each again at its address" :
		 "this glibc does not register it");
}

/* clone3 asking for pid 1, which exists: EEXIST when we may choose
 * pids, EPERM without CAP_CHECKPOINT_RESTORE, ENOSYS or EINVAL when the
 * kernel lacks clone3 or set_tid. A success would fork: the child
 * leaves at once. */
static int clone3_set_tid_errno(void)
{
	pid_t want = 1;
	struct clone_args args;
	long r;

	memset(&args, 0, sizeof(args));
	args.exit_signal = SIGCHLD;
	args.set_tid = (uintptr_t)&want;
	args.set_tid_size = 1;
	r = syscall(SYS_clone3, &args, sizeof(args));
	if (r == 0)
		_exit(0);
	if (r > 0) {
		waitpid(r, NULL, 0);
		return 0;
	}
	return errno;
}

void check_clone3_set_tid(struct check *c)
{
	int err = clone3_set_tid_errno();

	c->name = "clone3_set_tid";
	c->available = err == EEXIST || err == 0;
	snprintf(c->detail, sizeof(c->detail), "%s",
		 c->available ? "clone3(2) may choose pids here" :
		 err == EPERM ? "clone3(2) with set_tid needs "
		 "CAP_CHECKPOINT_RESTORE, which this user lacks" :
		 err == ENOSYS ? "clone3(2) is missing" :
		 "clone3(2) has no set_tid");
	snprintf(c->without, sizeof(c->without), "not needed: restarted "
		 "processes and threads keep their virtual pids and tids "
		 "(libckpt translates them), so ckpt never asks for a pid");
}

void check_kcmp(struct check *c)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	long r = syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, fd, fd);
	int err = errno;

	if (fd >= 0)
		close(fd);
	c->name = "kcmp";
	c->available = r == 0;
	snprintf(c->detail, sizeof(c->detail), "%s", c->available ?
		 "kcmp(2) compares open file descriptions" :
		 err == ENOSYS ? "kcmp(2) is missing" : strerror(err));
	if (!c->available)
		snprintf(c->without, sizeof(c->without), "descriptors that "
			 "share an open file description (dup, inherited "
			 "across fork) are restored as separate descriptions: "
			 "their file offsets no longer move together");
}

/* The pagemap entry of one page of ours. */
static int pagemap_entry(void *page, uint64_t *entry)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	long psize = sysconf(_SC_PAGESIZE);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, entry, 8, (uintptr_t)page / psize * 8);
	close(fd);
	return n == 8 ? 0 : n < 0 ? -errno : -EIO;
}

void check_pagemap(struct check *c)
{
	uint64_t entry;
	int r = pagemap_entry(&entry, &entry);

	c->name = "pagemap";
	c->required = true;
	c->available = r == 0;
	snprintf(c->detail, sizeof(c->detail), "/proc/self/pagemap: %s",
		 r ? strerror(-r) : "readable");
	if (r)
		snprintf(c->without, sizeof(c->without), "checkpoints fail: "
			 "the memory writer learns from it which pages hold "
			 "data (mount /proc)");
}

/* Clear our soft-dirty bits, write a page, see whether pagemap says it
 * was written. A kernel without CONFIG_MEM_SOFT_DIRTY accepts the clear
 * and never sets the bit. */
static int soft_dirty_works(char *why, size_t len)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	volatile char *page;
	uint64_t entry = 0;
	int r = -errno;

	if (fd < 0) {
		snprintf(why, len, "/proc/self/clear_refs: %s", strerror(-r));
		return 0;
	}
	r = write(fd, "4", 1) == 1 ? 0 : -errno;
	close(fd);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == 0 && page != MAP_FAILED) {
		page[0] = 1;
		r = pagemap_entry((void *)page, &entry);
	}
	if (page != MAP_FAILED)
		munmap((void *)page, 4096);
	snprintf(why, len, "%s", r ? strerror(-r) : entry & PM_SOFT_DIRTY ?
		 "a written page shows the soft-dirty bit" :
		 "a written page does not show the soft-dirty bit (kernel "
		 "built without CONFIG_MEM_SOFT_DIRTY)");
	return r == 0 && (entry & PM_SOFT_DIRTY);
}

void check_soft_dirty(struct check *c)
{
	c->name = "soft_dirty";
	c->available = soft_dirty_works(c->detail, sizeof(c->detail));
	if (!c->available)
		snprintf(c->without, sizeof(c->without), "no dirty-page "
			 "tracking by soft-dirty: ckpt saves every populated "
			 "page (docs/kernel.md lists the other trackers)");
}

static const char *ptrace_scope_meaning(int scope)
{
	switch (scope) {
	case 0: return "classic: any process of the same user";
	case 1: return "restricted: only descendants";
	case 2: return "admin-only attach";
	case 3: return "no attach at all";
	}
	return "unknown value";
}

void check_ptrace_scope(struct check *c)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = -1;

	c->name = "ptrace_scope";
	c->available = true;
	if (f && fscanf(f, "%d", &scope) != 1)
		scope = -1;
	if (f)
		fclose(f);
	if (!f) {
		snprintf(c->value, sizeof(c->value), "absent");
		snprintf(c->detail, sizeof(c->detail), "Yama is not active: "
			 "ptrace is not restricted beyond the usual checks");
	} else {
		snprintf(c->value, sizeof(c->value), "%d", scope);
		snprintf(c->detail, sizeof(c->detail), "kernel.yama."
			 "ptrace_scope = %d (%s)", scope,
			 ptrace_scope_meaning(scope));
	}
	snprintf(c->without, sizeof(c->without), "any value works: ckpt "
		 "attaches to no process; kcmp and /proc/PID reads need only "
		 "read access, which Yama does not restrict");
}
