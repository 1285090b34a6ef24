/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The restart sequence inside the restored process. The restart loader
 * (restart/loader) has rebuilt the address space and jumps here on
 * ckpt_restore_stack with the main thread's TLS, all signals blocked:
 *
 *   1. take the loader's hand-off (struct ckpt_restart_args)
 *   2. the process's new real pid behind its old virtual one
 *   3. restore each resource: process attributes, signal actions, fds
 *   4. recreate every thread but the main one, each resuming inside its
 *      signal handler; they re-register rseq, robust list and tid
 *   5. unmap the loader
 *   6. release the threads and become the main thread; the manager
 *      thread rejoins the coordinator (manager.c)
 */
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

char ckpt_restore_stack[256 * 1024] __attribute__((aligned(16)));
const size_t ckpt_restore_stack_size = sizeof(ckpt_restore_stack);

static struct ckpt_restart_args restart_args;

static void __attribute__((noreturn)) restore_failed(const char *what,
						     const char *why)
{
	ckpt_log("restart from %s failed: %s: %s", restart_args.image_path,
		 what, why);
	syscall(SYS_exit_group, 1);
	__builtin_unreachable();
}

static void unmap_loader(void)
{
	uint32_t n = restart_args.nloader_mappings;

	if (n > CKPT_LOADER_MAX_MAPPINGS)
		n = CKPT_LOADER_MAX_MAPPINGS;
	for (uint32_t i = 0; i < n; i++) {
		const struct ckpt_range *r = &restart_args.loader_mappings[i];

		if (r->end > r->start)
			munmap((void *)(uintptr_t)r->start, r->end - r->start);
	}
}

/* glibc remembers the break it last set; the kernel's break is now the
 * loader's. Without PR_SET_MM the kernel's cannot be moved back, so glibc
 * is told where it is: its next sbrk grows from there and malloc carries
 * on with a non-contiguous main arena. */
extern void *__curbrk;

static void follow_kernel_break(void)
{
	long brk = syscall(SYS_brk, 0);

	if (brk > 0)
		__curbrk = (void *)brk;
}

void ckpt_restore_entry(struct ckpt_restart_args *args)
{
	char err[512];
	int r;

	if (args->magic != CKPT_RESTART_ARGS_MAGIC ||
	    args->version < 1 || args->version > CKPT_RESTART_ARGS_VERSION) {
		static const char msg[] = "ckpt: restart loader and libckpt "
					  "in the image do not match\n";
		write(STDERR_FILENO, msg, sizeof(msg) - 1);
		syscall(SYS_exit_group, 70);
	}
	if (args->version >= 2) {
		memcpy(&restart_args, args, sizeof(restart_args));
	} else {
		memcpy(&restart_args, args,
		       offsetof(struct ckpt_restart_args, plan_fd));
		restart_args.plan_fd = -1;
		restart_args.keep_fd_end = 0;
	}
	ckpt_forget_own_fds();
	threads_set_current_features(restart_args.current_xcr0);
	follow_kernel_break();
	vpid_map(ckpt.vpid, ckpt_real_getpid());
	if (restart_args.plan_fd >= 0) {
		r = vpid_load_plan(restart_args.plan_fd);
		if (r < 0)
			restore_failed("reading the pid map of the restart "
				       "plan", strerror(-r));
	}
	if (restart_args.coord_addr[0])
		ckpt_fmt(ckpt.coord_addr, sizeof(ckpt.coord_addr), "%s",
			 restart_args.coord_addr);
	if (restart_args.ckpt_dir[0])
		ckpt_fmt(ckpt.ckpt_dir, sizeof(ckpt.ckpt_dir), "%s",
			 restart_args.ckpt_dir);
	r = checkpoint_restore_resources(&restart_args);
	if (r < 0)
		restore_failed("restoring process resources", strerror(-r));
	r = threads_restore_all(err, sizeof(err));
	if (r < 0)
		restore_failed("recreating threads", err);
	unmap_loader();
	threads_release_restored();
}
