/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which signal stops the threads for a checkpoint, and how it gets out of
 * the program's way.
 *
 * ckpt takes a real-time signal the program has no handler for (from
 * SIGRTMAX down; glibc's own 32 and 33 are below SIGRTMIN). When the
 * program later installs a handler for that signal, ckpt moves to another
 * free one (ckpt_signal_move): every other thread is first parked in the
 * checkpoint handler by the old signal, the new signal gets the handler,
 * and each thread, still parked, swaps the two signals in the mask its
 * signal frame restores. No checkpoint round runs meanwhile (the signal
 * lock of threads.c), so no checkpoint signal is lost or reaches the
 * program's handler. Per thread, the program's wish for the checkpoint
 * signal in its mask is kept aside (the kernel's bit stays clear), and
 * what the program set with SIG_DFL or SIG_IGN on it is recorded and
 * shown back. CKPT_SIGNAL=N pins the signal: it never moves then.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include "internal.h"

/* The program's SIG_DFL or SIG_IGN on the signals ckpt holds. */
static struct sigaction program_action[65];
/* bit sig-1: the program asked the handler of sig to mask the
 * checkpoint signal (the kernel's copy does not) */
static uint64_t handler_masks_ckpt;
static int pinned;
/* the program wants the checkpoint signal blocked in this thread */
static __thread int wish_blocked __attribute__((tls_model("initial-exec")));

static int (*real_sigaction)(int, const struct sigaction *,
			     struct sigaction *);

static void resolve_sigaction(void)
{
	if (!real_sigaction)
		real_sigaction = (int (*)(int, const struct sigaction *,
					  struct sigaction *))
			dlsym(RTLD_NEXT, "sigaction");
}

CKPT_EARLY_CONSTRUCTOR static void resolve_next_sigaction(void)
{
	resolve_sigaction();
}

static int next_sigaction(int sig, const struct sigaction *act,
			  struct sigaction *old)
{
	resolve_sigaction();
	if (!real_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction(sig, act, old);
}

/* 0 for no signal (none was free at start-up) */
static uint64_t bit(int sig)
{
	return sig > 0 && sig <= 64 ? 1ULL << (sig - 1) : 0;
}

/* The checkpoint signal's bit in a mask word; 0 when there is none. */
uint64_t ckpt_signal_bit(void)
{
	return bit(ckpt.signal);
}

static int valid_rt_signal(int sig)
{
	return sig >= SIGRTMIN && sig <= SIGRTMAX;
}

static int has_handler(const struct sigaction *sa)
{
	return sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN;
}

/* A real-time signal other than `except` the program has no handler for,
 * 0 when none is left. */
static int choose_free_signal(int except)
{
	struct sigaction sa;

	for (int sig = SIGRTMAX; sig >= SIGRTMIN; sig--) {
		if (sig == except || sig == ckpt.signal)
			continue;
		if (next_sigaction(sig, NULL, &sa) == 0 && !has_handler(&sa))
			return sig;
	}
	return 0;
}

/* At start-up: CKPT_SIGNAL pins the signal; CKPT_SIGNAL_INHERITED is the
 * one the program before an exec used (blocked across the exec, so it
 * must be ours again); otherwise the first free one. */
void ckpt_signal_choose(void)
{
	const char *pin = getenv("CKPT_SIGNAL");
	const char *inherited = getenv("CKPT_SIGNAL_INHERITED");
	struct sigaction sa;
	int sig;

	ckpt.signal = 0;
	if (pin && valid_rt_signal(atoi(pin))) {
		ckpt.signal = atoi(pin);
		pinned = 1;
		debugger_note(CKPT_DEBUGGER_SIGNAL, ckpt.signal);
		return;
	}
	if (pin && *pin)
		ckpt_log("CKPT_SIGNAL=%s is not a real-time signal (%d..%d); "
			 "choosing one", pin, SIGRTMIN, SIGRTMAX);
	sig = inherited ? atoi(inherited) : 0;
	unsetenv("CKPT_SIGNAL_INHERITED");
	if (valid_rt_signal(sig) && next_sigaction(sig, NULL, &sa) == 0 &&
	    !has_handler(&sa))
		ckpt.signal = sig;
	else
		ckpt.signal = choose_free_signal(0);
	debugger_note(CKPT_DEBUGGER_SIGNAL, ckpt.signal);
}

int ckpt_signal_pinned(void)
{
	return pinned;
}

/* For the environment of an exec: the program after it starts with the
 * same signal. */
void ckpt_signal_env(char *buf, size_t len)
{
	ckpt_fmt(buf, len, "%s=%d", pinned ? "CKPT_SIGNAL" :
		 "CKPT_SIGNAL_INHERITED", ckpt.signal);
}

/* Install the checkpoint handler on sig, remembering what the program
 * had there. */
int ckpt_signal_take(int sig, const struct sigaction *handler)
{
	struct sigaction before;

	if (next_sigaction(sig, handler, &before) < 0)
		return -errno;
	signals_return_through_libckpt(sig);
	if (has_handler(&before)) {
		memset(&before, 0, sizeof(before));
		before.sa_handler = SIG_DFL;
	}
	program_action[sig] = before;
	return 0;
}

/* sigaction on the checkpoint signal without a handler: recorded. */
void ckpt_signal_record_action(const struct sigaction *act,
			       struct sigaction *old)
{
	int sig = ckpt.signal;

	if (old)
		*old = program_action[sig];
	if (act)
		program_action[sig] = *act;
}

const struct sigaction *ckpt_signal_program_action(int sig)
{
	return &program_action[sig];
}

/* Did the program ask the handler of sig to mask the checkpoint signal?
 * (The kernel's copy of the handler never does.) */
int ckpt_signal_handler_masks(int sig)
{
	return !!(handler_masks_ckpt & bit(sig));
}

void ckpt_signal_set_handler_masks(int sig, int masks)
{
	if (masks)
		handler_masks_ckpt |= bit(sig);
	else
		handler_masks_ckpt &= ~bit(sig);
}

struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/* Moving from `from` to `to`: every handler of the program masks `to`
 * only in the program's view, and masks `from` again if it asked to. */
void ckpt_signal_move_handler_masks(int from, int to)
{
	struct kernel_sigaction ka;

	for (int sig = 1; sig <= 64; sig++) {
		uint64_t wanted = handler_masks_ckpt & bit(sig), mask;

		if (sig == from || sig == to || sig == SIGKILL ||
		    sig == SIGSTOP ||
		    syscall(SYS_rt_sigaction, sig, NULL, &ka, 8) < 0 ||
		    ka.handler == SIG_DFL || ka.handler == SIG_IGN)
			continue;
		mask = (ka.mask & ~bit(to)) | (wanted ? bit(from) : 0);
		handler_masks_ckpt = (handler_masks_ckpt & ~bit(sig)) |
				     (ka.mask & bit(to) ? bit(sig) : 0);
		if (mask == ka.mask)
			continue;
		ka.mask = mask;
		syscall(SYS_rt_sigaction, sig, &ka, NULL, 8);
	}
}

/* A thread's mask as the program sees it (kernel: the kernel's). */
uint64_t ckpt_signal_program_mask(uint64_t kernel)
{
	uint64_t b = bit(ckpt.signal);

	return wish_blocked ? kernel | b : kernel & ~b;
}

/* The kernel's mask for the program's; remembers the program's wish. */
uint64_t ckpt_signal_kernel_mask(uint64_t program)
{
	uint64_t b = bit(ckpt.signal);

	wish_blocked = !!(program & b);
	return program & ~b;
}

/* After a move from `from` to `to`, a thread's mask (as its signal frame
 * or its wrapper will restore it): `to` becomes ckpt's, `from` the
 * program's again. */
void ckpt_signal_swap_mask(uint64_t *mask, int from, int to)
{
	int wants_to = !!(*mask & bit(to));

	*mask &= ~bit(to);
	if (wish_blocked)
		*mask |= bit(from);
	else
		*mask &= ~bit(from);
	wish_blocked = wants_to;
}

void ckpt_signal_swap_frame_mask(void *ucontext, int from, int to)
{
	ucontext_t *uc = ucontext;
	uint64_t mask;

	memcpy(&mask, &uc->uc_sigmask, sizeof(mask));
	ckpt_signal_swap_mask(&mask, from, to);
	memcpy(&uc->uc_sigmask, &mask, sizeof(mask));
}

static unsigned moves;

/* How many moves were made: a signal handler of the program compares. */
unsigned ckpt_signal_moves(void)
{
	return __atomic_load_n(&moves, __ATOMIC_ACQUIRE);
}

/* The mask a signal frame restores, in the program's terms. */
uint64_t ckpt_signal_frame_program_mask(const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	uint64_t mask;

	memcpy(&mask, &uc->uc_sigmask, sizeof(mask));
	return ckpt_signal_program_mask(mask);
}

/* The frame restores `program` (the program's terms) with the checkpoint
 * signal of now; called with every signal blocked. */
void ckpt_signal_set_frame_mask(void *ucontext, uint64_t program)
{
	ucontext_t *uc = ucontext;
	uint64_t mask = ckpt_signal_kernel_mask(program);

	memcpy(&uc->uc_sigmask, &mask, sizeof(mask));
}

/* The wish of a mask the program had (its terms) applies again. */
void ckpt_signal_restore_wish(uint64_t program)
{
	wish_blocked = !!(program & bit(ckpt.signal));
}

/* The checkpoint signal when the program wants it blocked in this
 * thread, else 0. */
int ckpt_signal_blocked_here(void)
{
	return wish_blocked ? ckpt.signal : 0;
}

/* In a new thread whose creator wanted `sig`, then the checkpoint signal,
 * blocked: the same. A move since made `sig` the program's; the thread,
 * moved with the wish of a new thread, has it unblocked: block it. */
void ckpt_signal_inherit_blocked(int sig)
{
	uint64_t mask;

	threads_block_all(&mask);
	if (sig == ckpt.signal)
		wish_blocked = 1;
	else
		mask |= bit(sig);
	threads_set_mask(mask);
}

/* The manager thread never takes the program's signals. */
void ckpt_signal_block_in_this_thread(void)
{
	wish_blocked = 1;
}

/* The program installs a handler on the checkpoint signal: move ckpt to
 * a free one, then install(arg) gives the program its signal. Called with
 * the signal lock held and every signal blocked in this thread; own_mask:
 * this thread's mask to restore, converted here. */
int ckpt_signal_move(int (*install)(void *arg), void *arg,
		     uint64_t *own_mask, char *err, size_t errlen)
{
	int from = ckpt.signal, to, r;
	struct sigaction handler;

	/* a manager thread just created takes its part before parking */
	manager_wait_started();
	r = threads_park_for_move(err, errlen);
	if (r < 0)
		goto fail;
	r = -EAGAIN;
	to = choose_free_signal(from);
	if (!to) {
		ckpt_fmt(err, errlen, "every other real-time signal has a "
			 "handler");
		goto fail;
	}
	threads_checkpoint_action(&handler);
	r = ckpt_signal_take(to, &handler);
	if (r < 0) {
		ckpt_fmt(err, errlen, "installing the handler of signal %d: "
			 "%s", to, strerror(-r));
		goto fail;
	}
	ckpt_signal_move_handler_masks(from, to);
	__atomic_store_n(&ckpt.signal, to, __ATOMIC_RELEASE);
	r = install(arg);
	if (r < 0) {
		/* the program's action was refused: ckpt keeps `from` */
		__atomic_store_n(&ckpt.signal, from, __ATOMIC_RELEASE);
		ckpt_signal_move_handler_masks(to, from);
		next_sigaction(to, &program_action[to], NULL);
		ckpt_fmt(err, errlen, "%s", strerror(-r));
		goto fail;
	}
	__atomic_add_fetch(&moves, 1, __ATOMIC_RELEASE);
	debugger_note(CKPT_DEBUGGER_SIGNAL, to);
	threads_release_from_move(from, to);
	ckpt_signal_swap_mask(own_mask, from, to);
	return 0;
fail:
	threads_release_from_move(0, 0);
	return r;
}
