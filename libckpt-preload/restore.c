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
 *      signal handler; they re-register rseq, robust list and tid; then
 *      the POSIX timers (one may signal a thread)
 *   5. unmap the loader
 *   6. wait until every process of the restart is that far
 *      (restart_barrier.c)
 *   6b. put back the rest of TCP queues that did not fit (tcp_rest.c)
 *   7. release the manager thread, which sends the coordinator its HELLO
 *      (manager.c), then the program's threads once it has, and become
 *      the main thread
 */
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

char ckpt_restore_stack[256 * 1024] __attribute__((aligned(16)));
const size_t ckpt_restore_stack_size = sizeof(ckpt_restore_stack);

static struct ckpt_restart_args restart_args;

/* Messages of the restart go to the stderr of ckpt_restart, which the
 * restore of fd 2 replaces with the program's. */
static void log_to_restart_stderr(void)
{
	/* at a number no saved descriptor will take */
	int fd = files_private_fd(fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3));

	if (fd < 0)
		return;
	ckpt_log_fd = fd;
}

static void log_to_program_stderr(void)
{
	if (ckpt_log_fd != STDERR_FILENO) {
		ckpt_mark_own_fd(ckpt_log_fd, 0);
		close(ckpt_log_fd);
	}
	ckpt_log_fd = STDERR_FILENO;
}

static void __attribute__((noreturn)) restore_failed(const char *what,
						     const char *why)
{
	ckpt_log("restart from %s failed: %s: %s", restart_args.image_path,
		 what, why);
	restart_barrier_fail();
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

/*
 * Normally the loader put the kernel's program break back exactly where
 * it was. When it could not (CKPT_RESTART_ASLR=1, or no room for the
 * loader below the heap) and the kernel's break is above glibc's, a brk()
 * from glibc's saved break would return the kernel's higher break, which
 * glibc takes for success over memory that is not mapped: glibc is told
 * the kernel's break instead. A kernel break below the heap needs nothing:
 * glibc's first sbrk fails and malloc goes on with mmap.
 */
extern void *__curbrk;

static void follow_kernel_break_if_above(void)
{
	long brk = syscall(SYS_brk, 0);

	if (brk > 0 && (uintptr_t)brk > (uintptr_t)__curbrk)
		__curbrk = (void *)brk;
}

/* The fields of args' version; the others as a loader without them. */
static void copy_restart_args(const struct ckpt_restart_args *args)
{
	size_t n = sizeof(restart_args);

	if (args->version < 2)
		n = offsetof(struct ckpt_restart_args, plan_fd);
	else if (args->version < 3)
		n = offsetof(struct ckpt_restart_args, image_mapped_at);
	memset(&restart_args, 0, sizeof(restart_args));
	restart_args.plan_fd = -1;
	memcpy(&restart_args, args, n);
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
	copy_restart_args(args);
	emulator_threads_refresh();
	ckpt_forget_own_fds();
	restart_image_note_mapped(restart_args.image_mapped_at,
				  restart_args.image_fd);
	if (restart_args.flags & CKPT_RESTART_F_ARGS_KEPT)
		memory_note_args_area_kept();
	log_to_restart_stderr();
	threads_set_current_features(restart_args.current_xcr0);
	follow_kernel_break_if_above();
	/* the ids of the run checkpointed: the plan says the new ones */
	vpid_init(ckpt.vpid, ckpt_real_getpid());
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
	restart_barrier_open(restart_args.plan_fd, ckpt.vpid);
	r = checkpoint_restore_resources(&restart_args);
	if (r < 0)
		restore_failed("restoring process resources", strerror(-r));
	signals_all_return_through_libckpt();
	r = threads_restore_all(err, sizeof(err));
	if (r < 0)
		restore_failed("recreating threads", err);
	posix_timers_restore();
	unmap_loader();
	log_to_program_stderr();
	if (files_restored_a_terminal())
		syscall(SYS_kill, ckpt_real_getpid(), SIGWINCH);
	embedding_note_restored();
	record_inputs_restarted();
	lock_order_restarted();
	restart_barrier_wait();
	tcp_rest_send();
	debugger_stop_if_asked(restart_args.flags);
	threads_release_restored();
}
