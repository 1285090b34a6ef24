/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Threads: stopping every thread of the process for a checkpoint, and
 * bringing them back in a restarted process.
 *
 * Each thread is stopped inside the handler of the reserved signal. The
 * kernel's signal frame on that thread's stack already holds its complete
 * register file (general, FPU/SSE/AVX via xsave), signal mask and
 * alternate stack; the handler adds what the frame lacks (TLS base,
 * clear-child-tid, robust list, rseq) and parks on a futex. After a
 * restart the thread is recreated with clone() on its old stack, jumps
 * back into the handler, re-registers the per-thread kernel state and
 * returns through rt_sigreturn, which reloads everything else.
 * Threads are found from the kernel's view (/proc/self/task), so threads
 * created without pthread_create are stopped too.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/proc_stat.h"
#include "../protocol/client_internal.h"
#include "internal.h"

__thread uint64_t ckpt_interrupts __attribute__((tls_model("initial-exec")));

/* A short wrapper section that no checkpoint or move of the checkpoint
 * signal may split (threads_critical_begin): depth of this thread's
 * sections, and the checkpoint signal that came meanwhile, taken again
 * at the end. Cheaper than blocking signals: no system call. */
static __thread int critical_depth __attribute__((tls_model("initial-exec")));
static __thread int critical_deferred
	__attribute__((tls_model("initial-exec")));

extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static struct ckpt_thread slots[CKPT_MAX_THREADS];
static struct ckpt_thread manager_slot;
static int nslots;
static int suspended_count;	/* futex: threads parked in the handler */
static int resume_word;		/* futex: bumped to release them */
static int round_active;	/* the handler only parks during a round */
static int restored_count;	/* futex: threads back after a restart */
/* futex: how far restored threads may go. The manager thread goes first
 * and says HELLO (manager_after_restart), the program's threads once it
 * has: a checkpoint asked for as soon as the program runs again then
 * finds the process a member (docs/protocol.md, "Members of a round"). */
static int restart_go;
enum { RESTART_HOLD, RESTART_MANAGER_GO, RESTART_ALL_GO };
static int restart_hello_sent;	/* futex: the manager's HELLO went out */
#define RESTART_HELLO_WAIT_MS 6000	/* its connect, maybe a new coordinator */
/* futex: 1 from the recreation of a restarted process's threads until the
 * leader let them all go. A checkpoint asked for as soon as the HELLO is
 * out waits for it (bounded): its round must neither stop the leader
 * inside the restore nor set restart_go back under threads still reading
 * it (the leader then waited for a HELLO already sent and did not stop:
 * "thread ... did not stop within 3750 ms"). */
static int restart_releasing;
static int slot_overflow;
/* Moving the checkpoint signal (ckpt_signal.c): the threads park like for
 * a checkpoint, then swap the old and new signals in their masks. */
static int move_active;
static int move_parked;		/* futex: threads parked for the move */
static int move_word;		/* futex: bumped to release them */
static int move_from, move_to;	/* the move done, 0: none */
/* futex: held while threads are signaled, for a checkpoint or a move */
static int signal_lock;

static long futex(int *addr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static void futex_wake_all(int *addr)
{
	futex(addr, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL);
}

static void wait_while_equal(int *addr, int val)
{
	while (__atomic_load_n(addr, __ATOMIC_ACQUIRE) == val)
		futex(addr, FUTEX_WAIT_PRIVATE, val, NULL);
}

static void wait_until_at_least(int *addr, int want)
{
	int v;

	while ((v = __atomic_load_n(addr, __ATOMIC_ACQUIRE)) < want)
		futex(addr, FUTEX_WAIT_PRIVATE, v, NULL);
}

/* The thread's CPU affinity, nice value and scheduling policy: the
 * kernel's, per thread, lost when the restart makes the thread again. */
static void capture_scheduling(struct ckpt_thread *t)
{
	t->affinity_saved = sched_getaffinity(0, sizeof(t->affinity),
					      &t->affinity) == 0;
	errno = 0;
	t->nice = getpriority(PRIO_PROCESS, 0);
	if (t->nice == -1 && errno)
		t->nice = 0;
	t->policy = sched_getscheduler(0);
	if (t->policy < 0 || sched_getparam(0, &t->sched_param) < 0)
		t->policy = -1;
}

/* Put them back: an affinity to CPUs this machine lacks, a nice value
 * below the current one or a real-time policy without the privilege
 * is said and left. */
static void restore_scheduling(const struct ckpt_thread *t)
{
	if (t->affinity_saved &&
	    sched_setaffinity(0, sizeof(t->affinity), &t->affinity) < 0)
		ckpt_log("thread %d: its CPU affinity cannot be set again: %s",
			 (int)t->vtid, strerror(errno));
	if (getpriority(PRIO_PROCESS, 0) != t->nice &&
	    setpriority(PRIO_PROCESS, 0, t->nice) < 0)
		ckpt_log("thread %d: its nice value %d cannot be set again: %s",
			 (int)t->vtid, t->nice, strerror(errno));
	if (t->policy > 0 &&
	    sched_setscheduler(0, t->policy, &t->sched_param) < 0)
		ckpt_log("thread %d: its scheduling policy %d cannot be set "
			 "again: %s", (int)t->vtid, t->policy, strerror(errno));
}

void threads_capture_self(struct ckpt_thread *t)
{
	void *head = NULL;
	size_t len = 0;

	t->real_tid = ckpt_real_gettid();
	t->vtid = vpid_virt_from_real(t->real_tid);
	t->is_main = t->real_tid == ckpt_real_getpid();
	t->tls = arch_get_tls();
	t->clear_tid = tid_address_of_self();
	memset(t->name, 0, sizeof(t->name));
	prctl(PR_GET_NAME, t->name, 0, 0, 0);
	if (prctl(PR_GET_PDEATHSIG, &t->pdeathsig, 0, 0, 0) < 0)
		t->pdeathsig = 0;
	capture_scheduling(t);
	syscall(SYS_get_robust_list, 0, &head, &len);
	t->robust_head = head;
	t->robust_len = len;
	t->rseq = NULL;
	t->rseq_registered = 0;
	if (&__rseq_size && __rseq_size > 0) {
		/* glibc registers the area at tp + __rseq_offset; a
		 * negative cpu_id means registration failed or never ran. */
		t->rseq = (char *)t->tls + __rseq_offset;
		t->rseq_len = __rseq_size < 32 ? 32 : __rseq_size;
		t->rseq_registered =
			((volatile int32_t *)t->rseq)[1] >= 0;
	}
	thread_ids_capture(t);
}

/* Give the kernel back what clone() does not: rseq, robust list, the
 * tid glibc caches in the thread descriptor, the thread's name (a clone
 * takes its creator's, the main thread has the loader's) and its parent
 * death signal (a worker a server starts with PR_SET_PDEATHSIG must still
 * die with it; the restart's fork cleared it). */
static void reregister_self(struct ckpt_thread *t)
{
	t->real_tid = ckpt_real_gettid();
	if (t->name[0])
		prctl(PR_SET_NAME, t->name, 0, 0, 0);
	if (t->pdeathsig > 0 && t->pdeathsig < 65 &&
	    prctl(PR_SET_PDEATHSIG, t->pdeathsig, 0, 0, 0) < 0)
		ckpt_log("thread %d: setting its parent death signal %d "
			 "again failed: %s", (int)t->vtid, t->pdeathsig,
			 strerror(errno));
	restore_scheduling(t);
	if (t->clear_tid) {
		*t->clear_tid = t->real_tid;
		syscall(SYS_set_tid_address, t->clear_tid);
	}
	if (t->robust_head)
		syscall(SYS_set_robust_list, t->robust_head, t->robust_len);
	if (t->rseq_registered &&
	    syscall(SYS_rseq, t->rseq, t->rseq_len, 0, CKPT_RSEQ_SIG) != 0)
		ckpt_log("thread %d: rseq re-registration at %p failed: %s",
			 t->vtid, t->rseq, strerror(errno));
}

/* Called by every restored thread, the manager included: re-register,
 * report, and wait until the process-wide state is back. */
static uint64_t current_features;

/* Set by the restore entry: this CPU's xsave features (x86_64: XCR0). */
void threads_set_current_features(uint64_t features)
{
	current_features = features;
}

/* A thread stopped in wait4/waitid goes back into it with the registers
 * of the checkpoint (SA_RESTART): a child named there by its real pid
 * has another one after a restart. Remember it by its virtual pid. */
static void note_pid_in_pending_syscall(struct ckpt_thread *t)
{
	long nr = arch_frame_pending_syscall(t->uc);
	long pid;

	t->pid_arg = -1;
	if (nr == SYS_wait4)
		t->pid_arg = 0;
	else if (nr == SYS_waitid &&
		 (arch_frame_syscall_arg(t->uc, 0) == P_PID ||
		  arch_frame_syscall_arg(t->uc, 0) == P_PGID))
		t->pid_arg = 1;
	if (t->pid_arg < 0)
		return;
	pid = (long)(int)arch_frame_syscall_arg(t->uc, t->pid_arg);
	t->pid_arg_virt = pid > 0 ? vpid_virt_from_real(pid) :
		 pid < -1 ? -vpid_virt_from_real(-pid) : pid;
}

static void retarget_pending_syscall(struct ckpt_thread *t)
{
	pid_t v = t->pid_arg_virt, real;

	if (t->pid_arg < 0)
		return;
	real = v > 0 ? vpid_real_from_virt(v) :
	       v < -1 ? -vpid_real_from_virt(-v) : v;
	arch_frame_set_syscall_arg(t->uc, t->pid_arg,
				   (unsigned long)(long)real);
}

static void restored_barrier(struct ckpt_thread *t)
{
	if (t->uc) {
		arch_adapt_frame(t->uc, current_features);
		retarget_pending_syscall(t);
	}
	reregister_self(t);
	pending_requeue_thread(&t->pending);
	__atomic_add_fetch(&restored_count, 1, __ATOMIC_RELEASE);
	futex_wake_all(&restored_count);
	wait_until_at_least(&restart_go, t == &manager_slot ?
			    RESTART_MANAGER_GO : RESTART_ALL_GO);
}

void threads_manager_restored(void)
{
	manager_slot.pending.count = 0;
	manager_slot.uc = NULL;
	restored_barrier(&manager_slot);
}

static int sent_by_this_process(const siginfo_t *si)
{
	return si->si_code == SI_TKILL && si->si_pid == ckpt_real_getpid();
}

/* Park until the move is done, then take the new signal in the mask the
 * frame restores. */
static void park_for_move(void *uc)
{
	int gen = __atomic_load_n(&move_word, __ATOMIC_ACQUIRE);

	__atomic_add_fetch(&move_parked, 1, __ATOMIC_RELEASE);
	futex_wake_all(&move_parked);
	wait_while_equal(&move_word, gen);
	if (move_from && move_to)
		ckpt_signal_swap_frame_mask(uc, move_from, move_to);
	__atomic_sub_fetch(&move_parked, 1, __ATOMIC_RELEASE);
	futex_wake_all(&move_parked);
}

static void suspend_handler(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno, gen, idx;
	struct ckpt_thread *t;

	if (critical_depth && sent_by_this_process(si)) {
		critical_deferred = sig;
		return;
	}
	ckpt_interrupts += CKPT_INTR_CHECKPOINT;
	if (__atomic_load_n(&move_active, __ATOMIC_ACQUIRE) &&
	    sent_by_this_process(si)) {
		park_for_move(uc);
		goto out;
	}
	if (!__atomic_load_n(&round_active, __ATOMIC_ACQUIRE) ||
	    !sent_by_this_process(si))
		goto out;
	idx = __atomic_fetch_add(&nslots, 1, __ATOMIC_ACQ_REL);
	gen = __atomic_load_n(&resume_word, __ATOMIC_ACQUIRE);
	if (idx >= CKPT_MAX_THREADS) {
		slot_overflow = 1;
		__atomic_add_fetch(&suspended_count, 1, __ATOMIC_RELEASE);
		futex_wake_all(&suspended_count);
		wait_while_equal(&resume_word, gen);
		goto out;
	}
	t = &slots[idx];
	threads_capture_self(t);
	t->is_manager = 0;
	t->pc = arch_ucontext_pc(uc);
	t->sp = arch_ucontext_sp(uc);
	t->uc = uc;
	t->program_mask = ckpt_signal_frame_program_mask(uc);
	t->features_in_use = arch_frame_features_in_use(uc);
	note_pid_in_pending_syscall(t);
	pending_capture_thread(&t->pending);
	t->park_sp = (uintptr_t)__builtin_frame_address(0);
	if (ckpt_save_context(&t->ctx) == 0) {
		__atomic_add_fetch(&suspended_count, 1, __ATOMIC_RELEASE);
		futex_wake_all(&suspended_count);
		wait_while_equal(&resume_word, gen);
	} else {
		restored_barrier(t);
	}
out:
	errno = saved_errno;
}

/* A thread counts itself stopped a moment before it waits: the calls in
 * between (the futex wake, then the futex wait) write their frames below
 * its handler's frame, and a thread preempted there does so while the
 * manager writes the image. That memory is dead for the restored thread
 * (it resumes from its saved context, above), but the image's hash must
 * match what lands in the file: the writer copies these pages first
 * (image_writer.c). Seen as "memory ...: checksum mismatch" of a main
 * stack at restart, once, under CPU load. */
#define PARK_SCRATCH_BELOW	(16 << 10)
#define PARK_SCRATCH_ABOVE	256

int threads_park_area_overlaps(uint64_t addr, uint64_t len)
{
	int n = threads_count();

	for (int i = 0; i < n; i++) {
		uint64_t sp = slots[i].park_sp;

		if (sp && addr < sp + PARK_SCRATCH_ABOVE &&
		    addr + len > sp - PARK_SCRATCH_BELOW)
			return 1;
	}
	return 0;
}

/* Block or unblock (how) the checkpoint signal in this thread, past
 * libckpt's sigprocmask wrapper, which hides it; old: the mask before,
 * may be NULL. */
void threads_mask_ckpt_signal(int how, sigset_t *old)
{
	sigset_t one;

	sigemptyset(&one);
	sigaddset(&one, ckpt.signal);
	syscall(SYS_rt_sigprocmask, how, &one, old, _NSIG / 8);
}

/* The action of the checkpoint signal. */
void threads_checkpoint_action(struct sigaction *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sa_sigaction = suspend_handler;
	sa->sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa->sa_mask);
}

int threads_install_handler(void)
{
	struct sigaction sa;

	threads_checkpoint_action(&sa);
	return ckpt_signal_take(ckpt.signal, &sa);
}

static uint64_t all_signals = ~0ULL;

static void block_all_signals(uint64_t *old)
{
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all_signals, old, 8);
}

void threads_set_mask(uint64_t mask)
{
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, NULL, 8);
}

/* Take the signal lock, returning with every signal blocked in this
 * thread (old: the mask before). It waits with the mask it had, so a
 * checkpoint round can stop this thread meanwhile. */
void threads_lock_signal(uint64_t *old)
{
	struct timespec slice = { 0, 50 * 1000 * 1000 };

	for (;;) {
		block_all_signals(old);
		if (!__atomic_exchange_n(&signal_lock, 1, __ATOMIC_ACQUIRE))
			return;
		threads_set_mask(*old);
		futex(&signal_lock, FUTEX_WAIT_PRIVATE, 1, &slice);
	}
}

void threads_unlock_signal(void)
{
	__atomic_store_n(&signal_lock, 0, __ATOMIC_RELEASE);
	futex(&signal_lock, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* Every signal blocked here: the checkpoint signal cannot move until
 * threads_unblock (no move parks this thread meanwhile). */
void threads_block_all(uint64_t *old)
{
	block_all_signals(old);
}

/* Begin a section of a wrapper that a checkpoint or a move of the
 * checkpoint signal must not split, as if the signal were blocked, but
 * with no system call: the signal, if it comes, is taken again at
 * threads_critical_end. Only for sections that never block. Returns the
 * moves so far, for threads_critical_end. */
unsigned threads_critical_begin(void)
{
	critical_depth++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return ckpt_signal_moves();
}

/* Non-zero when the checkpoint signal moved since threads_critical_begin
 * (only possible in a program's signal handler that ran meanwhile: see
 * threads_critical_enter_handler); the caller then does its work again
 * the slow way. */
int threads_critical_end(unsigned moves_at_begin)
{
	int sig, e;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (--critical_depth == 0 && critical_deferred) {
		sig = critical_deferred;
		critical_deferred = 0;
		e = errno;
		syscall(SYS_tgkill, ckpt_real_getpid(), ckpt_real_gettid(),
			sig);
		errno = e;
	}
	return ckpt_signal_moves() != moves_at_begin;
}

/* A program's signal handler may run inside a section (its signal came
 * in the middle): it runs outside it, so a handler that runs long or
 * jumps out (siglongjmp) never holds checkpoints off. Returns the depth
 * to give back to threads_critical_leave_handler. */
int threads_critical_enter_handler(void)
{
	int depth = critical_depth;

	critical_depth = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return depth;
}

void threads_critical_leave_handler(int depth)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	critical_depth = depth;
}

/* In a forked child: the lock another thread of the parent held. */
void threads_reset_after_fork(void)
{
	signal_lock = 0;
	move_active = 0;
}

#define PF_IO_WORKER_FLAG 0x10	/* PF_IO_WORKER, include/linux/sched.h */

/* The state letter and the flags of a thread (/proc/self/task/N/stat);
 * state 'X' (dead) and no flags when it is gone. */
static void task_state(int tid, char *state, unsigned *flags)
{
	char path[64], buf[512], *p;

	*state = 'X';
	*flags = 0;
	ckpt_fmt(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (ckpt_read_small_file(path, buf, sizeof(buf)) <= 0)
		return;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return;
	*state = p[2];
	/* then ppid, pgrp, session, tty_nr, tpgid, flags */
	for (int field = 0; field < 6 && p; field++)
		p = strchr(p + 1, ' ');
	p = p ? strchr(p + 1, ' ') : NULL;
	*flags = p ? (unsigned)strtoul(p + 1, NULL, 10) : 0;
}

/* Gone ('X' from task_state too), or a zombie: a zombie leader (main
 * called pthread_exit) cannot take a signal. */
static int dead_state(char state)
{
	return state == 'Z' || state == 'X';
}

static int task_is_zombie(int tid)
{
	unsigned flags;
	char state;

	task_state(tid, &state, &flags);
	return dead_state(state);
}

/* A thread that never parks: a zombie leader, or one only the kernel
 * runs: io_uring's io-wq workers and SQPOLL thread (iou-wrk-N,
 * iou-sqp-N) are tasks of the process with every signal blocked but
 * SIGKILL and SIGSTOP; the kernel makes them again when a ring needs
 * them, and the image has no use for them. */
static int task_never_parks(int tid)
{
	unsigned flags;
	char state;

	task_state(tid, &state, &flags);
	return dead_state(state) || (flags & PF_IO_WORKER_FLAG);
}

static int task_exists(int tid)
{
	char path[64];

	ckpt_fmt(path, sizeof(path), "/proc/self/task/%d", tid);
	return syscall(SYS_faccessat, AT_FDCWD, path, F_OK) == 0 &&
	       !task_is_zombie(tid);
}

static int signaled[CKPT_MAX_THREADS];
static int nsignaled;

static int was_signaled(int tid)
{
	for (int i = 0; i < nsignaled; i++)
		if (signaled[i] == tid)
			return 1;
	return 0;
}

/* Signal every thread not yet signaled; returns how many were new. */
static int signal_new_threads(char *err, size_t errlen)
{
	struct ckpt_dir_iter it;
	int tid, self = ckpt_real_gettid(), pid = ckpt_real_getpid();
	int fresh = 0, r;

	r = ckpt_dir_open(&it, "/proc/self/task");
	if (r < 0) {
		ckpt_fmt(err, errlen, "open /proc/self/task: %s",
			 strerror(-r));
		return r;
	}
	while ((tid = ckpt_dir_next_number(&it)) > 0) {
		if (tid == self || was_signaled(tid) ||
		    task_never_parks(tid) || emulator_thread(tid))
			continue;
		if (nsignaled >= CKPT_MAX_THREADS) {
			ckpt_fmt(err, errlen, "more than %d threads",
				 CKPT_MAX_THREADS);
			ckpt_dir_close(&it);
			return -E2BIG;
		}
		if (syscall(SYS_tgkill, pid, tid, ckpt.signal) < 0) {
			if (errno == ESRCH)
				continue;
			r = -errno;
			ckpt_fmt(err, errlen, "tgkill thread %d: %s", tid,
				 strerror(-r));
			ckpt_dir_close(&it);
			return r;
		}
		signaled[nsignaled++] = tid;
		fresh++;
	}
	ckpt_dir_close(&it);
	return fresh;
}

/* Threads that exited after being signaled will never park. */
static int count_live_signaled(void)
{
	int live = 0;

	for (int i = 0; i < nsignaled; i++)
		if (task_exists(signaled[i]))
			live++;
	return live;
}

/* The first signaled thread that has not parked, or 0. */
static int first_unparked(void)
{
	for (int i = 0; i < nsignaled; i++) {
		int tid = signaled[i], found = 0;

		for (int j = 0; j < nslots && j < CKPT_MAX_THREADS; j++)
			if (slots[j].real_tid == tid)
				found = 1;
		if (!found && task_exists(tid))
			return tid;
	}
	return 0;
}

/* The pid of the process that traces thread tid (ptrace: a debugger,
 * strace), its name into comm; 0 when none. */
static int tracer_of(int tid, char *comm, size_t len)
{
	char path[64], text[2048];
	int tracer;

	ckpt_fmt(path, sizeof(path), "/proc/self/task/%d/status", tid);
	tracer = ckpt_proc_status_field(path, "TracerPid", text, sizeof(text));
	if (tracer <= 0)
		return 0;
	ckpt_proc_comm(tracer, comm, len);
	return tracer;
}

/* Where thread tid is, for a report: its state, the system call it is
 * in and whether it blocks the checkpoint signal (e.g. "state S, in
 * system call 202, blocks signal 64"), into buf; empty when unreadable. */
static void thread_whereabouts(int tid, char *buf, size_t len)
{
	char path[64], text[2048], call[32], *line;
	unsigned long long blocked = 0;
	char state = '?';
	long nr = -3;	/* -3: unknown, -2: on a CPU, -1: in user space */

	buf[0] = 0;
	ckpt_fmt(path, sizeof(path), "/proc/self/task/%d/status", tid);
	if (ckpt_proc_read(path, text, sizeof(text)) < 0)
		return;
	line = strstr(text, "\nState:");
	if (line)
		sscanf(line + 7, " %c", &state);
	line = strstr(text, "\nSigBlk:");
	if (line)
		sscanf(line + 8, " %llx", &blocked);
	ckpt_fmt(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	if (ckpt_proc_read(path, text, sizeof(text)) >= 0 &&
	    sscanf(text, "%ld", &nr) != 1)
		nr = -2;	/* "running" */
	if (nr == -3)
		ckpt_fmt(call, sizeof(call), "system call unknown");
	else if (nr == -2)
		ckpt_fmt(call, sizeof(call), "running");
	else if (nr == -1)
		ckpt_fmt(call, sizeof(call), "in user space");
	else
		ckpt_fmt(call, sizeof(call), "in system call %ld", nr);
	ckpt_fmt(buf, len, "state %c, %s, %s signal %d", state, call,
		 blocked >> (ckpt.signal - 1) & 1 ? "blocks" : "does not block",
		 ckpt.signal);
}

/* Why the threads did not all stop, into err. A traced thread stops for
 * its tracer at the checkpoint signal (gdb stops there by default), and
 * a trace cannot be restored anyway: say so rather than guess. */
static void explain_not_stopped(int timeout_ms, char *err, size_t errlen)
{
	int tid = first_unparked(), tracer;
	char comm[32];

	tracer = tid ? tracer_of(tid, comm, sizeof(comm)) : 0;
	if (tracer) {
		ckpt_fmt(err, errlen,
			 "thread %d did not stop within %d ms: it is traced "
			 "by pid %d (%s), which holds it at each signal; ckpt "
			 "cannot checkpoint a traced process nor restore a "
			 "trace (run the debugger or tracer outside the "
			 "computation, and detach it before a checkpoint)",
			 tid, timeout_ms, tracer, comm);
		return;
	}
	if (tid) {
		char where[128];

		thread_whereabouts(tid, where, sizeof(where));
		ckpt_fmt(err, errlen,
			 "thread %d did not stop within %d ms (%s; it may be "
			 "in an uninterruptible wait, or block signal %d with "
			 "a raw system call)", tid, timeout_ms,
			 where[0] ? where : "state unknown", ckpt.signal);
	}
	else
		ckpt_fmt(err, errlen,
			 "a thread did not stop within %d ms (it may be in "
			 "an uninterruptible wait, or block signal %d with a "
			 "raw system call)", timeout_ms, ckpt.signal);
}

/* How long the threads may take to stop: within the coordinator's
 * suspend bound (WELCOME), so that the process names the thread that did
 * not stop before the coordinator gives up on the process. */
static int stop_timeout_ms(void)
{
	int ms = (int)(ckpt.coord_phase_ms / 4 * 3);

	if (!ckpt.coord_phase_ms)
		return CKPT_SUSPEND_TIMEOUT_MS;
	return ms < 200 ? 200 : ms > CKPT_SUSPEND_TIMEOUT_MS ?
	       CKPT_SUSPEND_TIMEOUT_MS : ms;
}

static int wait_parked_on(int *count, char *err, size_t errlen)
{
	struct timespec start, now, slice = { 0, 50 * 1000 * 1000 };
	int timeout_ms = stop_timeout_ms();

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int have = __atomic_load_n(count, __ATOMIC_ACQUIRE);

		if (have >= nsignaled || have >= count_live_signaled())
			return 0;
		futex(count, FUTEX_WAIT_PRIVATE, have, &slice);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 +
		    (now.tv_nsec - start.tv_nsec) / 1000000 > timeout_ms)
			break;
	}
	explain_not_stopped(timeout_ms, err, errlen);
	return -ETIMEDOUT;
}

/* Signal every thread and wait until each parked (count), repeating
 * until a pass finds no new thread: a thread may be in the middle of
 * clone() when the first pass runs. */
static int park_every_thread(int *count, char *err, size_t errlen)
{
	int r;

	do {
		r = signal_new_threads(err, errlen);
		if (r >= 0)
			debugger_note(CKPT_DEBUGGER_THREADS_SIGNALED, nsignaled);
		if (r < 0 || (r = wait_parked_on(count, err, errlen)) < 0)
			return r;
	} while ((r = signal_new_threads(err, errlen)) > 0 &&
		 (r = wait_parked_on(count, err, errlen)) == 0);
	return r < 0 ? r : 0;
}

/* Park every other thread in the checkpoint handler for a move; the
 * caller holds the signal lock. */
int threads_park_for_move(char *err, size_t errlen)
{
	nsignaled = 0;
	move_from = move_to = 0;
	__atomic_store_n(&move_parked, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&move_active, 1, __ATOMIC_RELEASE);
	return park_every_thread(&move_parked, err, errlen);
}

/* Let the parked threads go; from, to: the move done (0, 0: none).
 * Returns once each has read it (the next move may change it). */
void threads_release_from_move(int from, int to)
{
	struct timespec slice = { 0, 50 * 1000 * 1000 };
	int left;

	move_from = from;
	move_to = to;
	__atomic_store_n(&move_active, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&move_word, 1, __ATOMIC_RELEASE);
	futex_wake_all(&move_word);
	for (int i = 0; i < CKPT_SUSPEND_TIMEOUT_MS / 50; i++) {
		left = __atomic_load_n(&move_parked, __ATOMIC_ACQUIRE);
		if (left <= 0)
			return;
		futex(&move_parked, FUTEX_WAIT_PRIVATE, left, &slice);
	}
	ckpt_log("moving the checkpoint signal from %d to %d: %d thread(s) "
		 "did not take the move within %d s", from, to, left,
		 CKPT_SUSPEND_TIMEOUT_MS / 1000);
}

/* A restarted process: until its leader let the restored threads go.
 * Bounded: the leader waits at most RESTART_HELLO_WAIT_MS for the HELLO,
 * which this manager sent before it took any round. */
static void wait_restart_released(void)
{
	int64_t deadline = ckpt_cc_now_ms() + RESTART_HELLO_WAIT_MS;

	while (__atomic_load_n(&restart_releasing, __ATOMIC_ACQUIRE) &&
	       ckpt_futex_wait_until(&restart_releasing, 1, deadline) == 0)
		;
}

static int suspend_all_locked(char *err, size_t errlen)
{
	int r;

	wait_restart_released();
	nslots = 0;
	nsignaled = 0;
	slot_overflow = 0;
	__atomic_store_n(&suspended_count, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&round_active, 1, __ATOMIC_RELEASE);
	r = park_every_thread(&suspended_count, err, errlen);
	if (r < 0)
		goto fail;
	if (slot_overflow) {
		ckpt_fmt(err, errlen, "more than %d threads", CKPT_MAX_THREADS);
		r = -E2BIG;
		goto fail;
	}
	/* what a restart from this image starts from; every thread is
	 * parked, none reads them now */
	restored_count = 0;
	restart_go = RESTART_HOLD;
	restart_hello_sent = 0;
	return 0;
fail:
	threads_resume_all();
	return r;
}

int threads_suspend_all(char *err, size_t errlen)
{
	uint64_t mask;
	int r;

	threads_lock_signal(&mask);
	r = suspend_all_locked(err, errlen);
	threads_unlock_signal();
	threads_set_mask(mask);
	return r;
}

void threads_resume_all(void)
{
	/* bytes a TCP peer read out of this process's send queue go back
	 * before the program writes again */
	tcp_refill_before_resume();
	debugger_note(CKPT_DEBUGGER_RELEASING, nslots);
	__atomic_store_n(&round_active, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&resume_word, 1, __ATOMIC_RELEASE);
	futex_wake_all(&resume_word);
	hooks_round_resumed();
}

int threads_count(void)
{
	int n = __atomic_load_n(&nslots, __ATOMIC_ACQUIRE);

	return n > CKPT_MAX_THREADS ? CKPT_MAX_THREADS : n;
}

const struct ckpt_thread *threads_get(int i)
{
	return i < threads_count() ? &slots[i] : &manager_slot;
}

struct ckpt_thread *threads_manager_slot(void)
{
	return &manager_slot;
}

static struct ckpt_thread *main_slot(void)
{
	for (int i = 0; i < threads_count(); i++)
		if (slots[i].is_main)
			return &slots[i];
	return manager_slot.is_main ? &manager_slot : NULL;
}

/* The TLS base the restore entry runs with: the main thread's. */
uint64_t threads_main_tls(void)
{
	struct ckpt_thread *m = main_slot();

	return m ? m->tls : manager_slot.tls;
}

/* For the image header: what the saved register state needs of a CPU. */
uint64_t threads_features_in_use(void)
{
	uint64_t all = 3;

	for (int i = 0; i < threads_count(); i++)
		all |= slots[i].features_in_use;
	return all;
}

static void resume_restored_thread(void *arg)
{
	struct ckpt_thread *t = arg;

	ckpt_resume_context(&t->ctx, CKPT_RESTARTED);
}

static int clone_restored_thread(struct ckpt_thread *t, char *err,
				 size_t errlen)
{
	unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES |
			      CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
			      CLONE_SETTLS | CLONE_PARENT_SETTID;
	/* The trampoline runs just below the stack pointer saved in the
	 * thread's context, on its own stack. */
	char *stack = (char *)(uintptr_t)t->ctx.sp - 1024;
	long tid;

	if (t->clear_tid)
		flags |= CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;
	tid = ckpt_clone_thread(flags, stack, &t->real_tid, t->clear_tid,
				t->tls, resume_restored_thread, t);
	if (tid < 0) {
		ckpt_fmt(err, errlen, "clone thread %d: %s", t->vtid,
			 strerror((int)-tid));
		return (int)tid;
	}
	vpid_map(t->vtid, (pid_t)tid);
	return 0;
}

/* Locks that name a thread by its tid at the checkpoint now name its new
 * tid (the main thread's is the leader's). */
static void rewrite_thread_ids(void)
{
	static struct ckpt_thread *all[CKPT_MAX_THREADS + 1];
	static pid_t new_tids[CKPT_MAX_THREADS + 1];
	int n = 0;

	for (int i = 0; i <= threads_count(); i++) {
		struct ckpt_thread *t = i < threads_count() ? &slots[i] :
							       &manager_slot;

		all[n] = t;
		new_tids[n++] = t->is_main ? ckpt_real_gettid() : t->real_tid;
	}
	thread_ids_restore(all, n, new_tids);
}

/* In the restarted process, on the leader: recreate every thread but the
 * main one (the leader becomes it), wait until all have re-registered
 * their per-thread kernel state, and rewrite the tids in their locks. */
int threads_restore_all(char *err, size_t errlen)
{
	struct timespec slice = { 0, 50 * 1000 * 1000 };
	int expected = 0, r, waited_ms = 0;
	struct ckpt_thread *m = main_slot();

	__atomic_store_n(&restart_releasing, 1, __ATOMIC_RELEASE);
	if (m)
		vpid_map(m->vtid, ckpt_real_gettid());
	for (int i = 0; i <= threads_count(); i++) {
		struct ckpt_thread *t = i < threads_count() ? &slots[i] :
							       &manager_slot;

		if (t->is_main)
			continue;
		r = clone_restored_thread(t, err, errlen);
		if (r < 0)
			return r;
		expected++;
	}
	for (;;) {
		int have = __atomic_load_n(&restored_count, __ATOMIC_ACQUIRE);

		if (have >= expected)
			break;
		if (waited_ms > CKPT_SUSPEND_TIMEOUT_MS) {
			ckpt_fmt(err, errlen,
				 "only %d of %d restored threads came back",
				 have, expected);
			return -ETIMEDOUT;
		}
		futex(&restored_count, FUTEX_WAIT_PRIVATE, have, &slice);
		waited_ms += 50;
	}
	rewrite_thread_ids();
	return 0;
}

/* In the manager thread of a restarted process: its HELLO is out (or
 * could not be sent), the program's threads may go. */
void threads_restart_hello_sent(void)
{
	__atomic_store_n(&restart_hello_sent, 1, __ATOMIC_RELEASE);
	futex_wake_all(&restart_hello_sent);
}

/* The manager thread first, until it said HELLO: bounded, a coordinator
 * it must start takes a moment, one that does not answer is left to the
 * manager's retries in the background. */
static void release_manager_first(void)
{
	struct timespec slice = { 0, 50 * 1000 * 1000 };

	__atomic_store_n(&restart_go, RESTART_MANAGER_GO, __ATOMIC_RELEASE);
	futex_wake_all(&restart_go);
	if (manager_slot.is_main)
		return;	/* not a thread of its own: nobody to wait for */
	for (int waited = 0; waited < RESTART_HELLO_WAIT_MS &&
	     !__atomic_load_n(&restart_hello_sent, __ATOMIC_ACQUIRE);
	     waited += 50)
		futex(&restart_hello_sent, FUTEX_WAIT_PRIVATE, 0, &slice);
}

/* Let the restored threads go, then turn the leader into the main thread
 * (or end it, when the main thread had already exited). */
void threads_release_restored(void)
{
	struct ckpt_thread *m = main_slot();

	pending_requeue_process();
	release_manager_first();
	__atomic_store_n(&restart_go, RESTART_ALL_GO, __ATOMIC_RELEASE);
	futex_wake_all(&restart_go);
	__atomic_store_n(&restart_releasing, 0, __ATOMIC_RELEASE);
	futex_wake_all(&restart_releasing);
	if (m && m != &manager_slot)
		ckpt_resume_context(&m->ctx, CKPT_RESTARTED);
	syscall(SYS_exit, 0);
	__builtin_unreachable();
}
