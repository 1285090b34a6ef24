/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Keep the checkpoint signal invisible (libckpt-preload/ckpt_signal.c):
 * a handler the program installs for it moves ckpt to another signal and
 * the program gets its own; SIG_DFL and SIG_IGN on it are recorded and
 * read back; its bit in the program's masks is the program's wish, kept
 * per thread, while the kernel's stays clear. Each wrapper runs with
 * every signal blocked, so no move happens in its middle.
 *
 * A handler installed with SA_SIGINFO is called through a trampoline that
 * gives it the sender's virtual pid in si_pid (kill, sigqueue, tgkill,
 * and SIGCHLD's child): after a restart the kernel names the senders by
 * their new real pids. sigaction's old action shows the program's own
 * handler, never the trampoline. sigwaitinfo, sigtimedwait and sigwait
 * do the same for the signal they return, never take the checkpoint
 * signal (a set made with sigfillset would swallow it), and go on
 * waiting when a checkpoint interrupted them.
 */
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include "wrappers.h"

DEFINE_NEXT(sigaction);
DEFINE_NEXT(signal);
DEFINE_NEXT(sigprocmask);
DEFINE_NEXT(pthread_sigmask);
DEFINE_NEXT(sigpending);
DEFINE_NEXT(sigsuspend);
DEFINE_NEXT(sigwaitinfo);
DEFINE_NEXT(sigtimedwait);
DEFINE_NEXT(signalfd);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_signal(void)
{
	RESOLVE_NEXT(sigaction);
	RESOLVE_NEXT(signal);
	RESOLVE_NEXT(sigprocmask);
	RESOLVE_NEXT(pthread_sigmask);
	RESOLVE_NEXT(sigpending);
	RESOLVE_NEXT(sigsuspend);
	RESOLVE_NEXT(sigwaitinfo);
	RESOLVE_NEXT(sigtimedwait);
	RESOLVE_NEXT(signalfd);
}

typedef void (*siginfo_handler)(int, siginfo_t *, void *);
typedef void (*plain_handler)(int);

/* The program's handler of each signal, called through the trampoline:
 * its address, with bit 63 set when it takes SA_SIGINFO arguments (one
 * word, so a handler running meanwhile never reads half of a change). */
#define TAKES_SIGINFO (1ULL << 63)
#define RESTARTS (1ULL << 62)		/* installed with SA_RESTART */
#define HANDLER_BITS (TAKES_SIGINFO | RESTARTS)
static uint64_t program_handlers[_NSIG];

/* Does si_pid name a process? (kill/sigqueue/tgkill/mq_notify senders,
 * and SIGCHLD's child; not timers, async I/O or SIGIO.) */
int signal_names_a_sender(int sig, int code)
{
	if (sig == SIGCHLD && code > 0)
		return 1;
	return code == SI_USER || code == SI_QUEUE || code == SI_TKILL ||
	       code == SI_MESGQ;
}

/* Every handler of the program runs through here: the sender's pid is
 * made virtual, and the mask the frame restores follows a move of the
 * checkpoint signal made while the handler ran (the move rewrote only
 * the innermost frame); the thread's wish for the checkpoint signal
 * returns to what it was before the handler, as its mask does. */
static void run_program_handler(int sig, siginfo_t *si, void *uc)
{
	uint64_t h = sig > 0 && sig < _NSIG ?
		__atomic_load_n(&program_handlers[sig], __ATOMIC_ACQUIRE) : 0;
	unsigned moves = ckpt_signal_moves();
	uint64_t outer = ckpt_signal_frame_program_mask(uc), blocked;
	int critical = threads_critical_enter_handler();

	/* before the handler: one that longjmps out ends the call anyway */
	ckpt_interrupts += h & RESTARTS ? CKPT_INTR_HANDLER_RESTART :
					  CKPT_INTR_HANDLER_NORESTART;
	if (si && si->si_pid > 0 && signal_names_a_sender(sig, si->si_code))
		si->si_pid = vpid_virt_from_real(si->si_pid);
	if (h & TAKES_SIGINFO)
		((siginfo_handler)(uintptr_t)(h & ~HANDLER_BITS))(sig, si, uc);
	else if (h)
		((plain_handler)(uintptr_t)(h & ~HANDLER_BITS))(sig);
	threads_critical_leave_handler(critical);
	if (!ckpt.signal)
		return;
	/* no move between this check and the return: sigreturn sets the
	 * mask from the frame */
	threads_block_all(&blocked);
	if (ckpt_signal_moves() != moves)
		ckpt_signal_set_frame_mask(uc, outer);
	else
		ckpt_signal_restore_wish(outer);
}

/* The program's view of a kernel action (the image's signal state,
 * signals.c): its own handler in place of the trampoline, SA_SIGINFO
 * only if it asked for it. */
void signal_program_view(int sig, uint64_t *handler, uint64_t *flags)
{
	uint64_t h;

	if (sig <= 0 || sig >= _NSIG ||
	    *handler != (uint64_t)(uintptr_t)run_program_handler)
		return;
	h = __atomic_load_n(&program_handlers[sig], __ATOMIC_ACQUIRE);
	*handler = h & ~HANDLER_BITS;
	if (!(h & TAKES_SIGINFO))
		*flags &= ~(uint64_t)SA_SIGINFO;
}

static uint64_t packed_handler(const struct sigaction *act)
{
	return (uint64_t)(uintptr_t)act->sa_handler |
	       (act->sa_flags & SA_SIGINFO ? TAKES_SIGINFO : 0) |
	       (act->sa_flags & SA_RESTART ? RESTARTS : 0);
}

static int wants_handler(const struct sigaction *act)
{
	return act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

/* sigaction with the trampoline in place of the program's handler; old
 * tells the program's handler and flags. */
static int sigaction_translated(int sig, const struct sigaction *act,
				struct sigaction *old)
{
	uint64_t before = program_handlers[sig];
	struct sigaction copy;
	int r;

	if (act && wants_handler(act)) {
		copy = *act;
		__atomic_store_n(&program_handlers[sig], packed_handler(act),
				 __ATOMIC_RELEASE);
		copy.sa_sigaction = run_program_handler;
		copy.sa_flags |= SA_SIGINFO;
		act = &copy;
	}
	r = NEXT_FN(sigaction)(sig, act, old);
	if (r < 0 && act == &copy)
		__atomic_store_n(&program_handlers[sig], before,
				 __ATOMIC_RELEASE);
	else if (r == 0 && act == &copy)
		signals_return_through_libckpt(sig);
	if (r == 0 && old && (old->sa_flags & SA_SIGINFO) &&
	    old->sa_sigaction == run_program_handler) {
		old->sa_handler = (sighandler_t)(uintptr_t)
				  (before & ~HANDLER_BITS);
		if (!(before & TAKES_SIGINFO))
			old->sa_flags &= ~SA_SIGINFO;
	}
	return r;
}

static const sigset_t *without_reserved(const sigset_t *set, sigset_t *copy)
{
	if (!set)
		return NULL;
	*copy = *set;
	sigdelset(copy, ckpt.signal);
	return copy;
}

/* sigaction of a signal that is not the checkpoint signal: its handler
 * masks the checkpoint signal only in the program's view. */
static int program_sigaction(int sig, const struct sigaction *act,
			     struct sigaction *old)
{
	int masked_before = ckpt_signal_handler_masks(sig), r;
	struct sigaction copy;

	if (act) {
		copy = *act;
		ckpt_signal_set_handler_masks(sig, sigismember(&copy.sa_mask,
							      ckpt.signal) == 1);
		sigdelset(&copy.sa_mask, ckpt.signal);
		act = &copy;
	}
	r = sig > 0 && sig < _NSIG ? sigaction_translated(sig, act, old) :
	    NEXT_FN(sigaction)(sig, act, old);
	if (r < 0)
		ckpt_signal_set_handler_masks(sig, masked_before);
	else if (old && masked_before)
		sigaddset(&old->sa_mask, ckpt.signal);
	return r;
}

struct program_handler {
	int sig;
	const struct sigaction *act;
	int refused;		/* the kernel refused the program's action */
};

static int install_program_handler(void *arg)
{
	struct program_handler *ph = arg;

	if (program_sigaction(ph->sig, ph->act, NULL) == 0)
		return 0;
	ph->refused = 1;
	return -errno;
}

static void warn_cannot_move_once(int sig, const char *why)
{
	static int warned;

	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		ckpt_log("sigaction: the program cannot have signal %d, which "
			 "stops its threads for checkpoints: %s", sig, why);
}

/* The program installs a handler on the checkpoint signal: ckpt moves. */
static int move_for_program(int sig, const struct sigaction *act,
			    struct sigaction *old)
{
	struct program_handler ph = { .sig = sig, .act = act };
	struct sigaction before;
	char err[256] = "";
	uint64_t mask;
	int r;

	threads_lock_signal(&mask);
	if (sig != ckpt.signal) {
		/* another thread moved it while this one waited */
		r = program_sigaction(sig, act, old) < 0 ? -errno : 0;
		ph.refused = 1;
		goto out;
	}
	before = *ckpt_signal_program_action(sig);
	if (ckpt_signal_pinned()) {
		r = -EINVAL;
		ckpt_fmt(err, sizeof(err), "CKPT_SIGNAL=%d pins it; unset "
			 "CKPT_SIGNAL to let ckpt choose", sig);
	} else {
		r = ckpt_signal_move(install_program_handler, &ph, &mask, err,
				     sizeof(err));
	}
	if (r == 0 && old)
		*old = before;
out:
	threads_unlock_signal();
	threads_set_mask(mask);
	if (r == 0)
		return 0;
	if (!ph.refused)
		warn_cannot_move_once(sig, err);
	errno = ph.refused ? -r : EINVAL;
	return -1;
}

/* A vfork child shares its parent's memory, not its signal actions, and
 * the parent cannot stop until the child execs: no move there. */
static int in_vfork_child(void)
{
	return ckpt_real_getpid() != vpid_real_from_virt(ckpt.vpid);
}

/* The action of sig, within a section no checkpoint or move splits
 * (signals blocked, or threads_critical_begin): 1 when the program
 * installs a handler on the checkpoint signal, which moves it. */
static int sigaction_unsplit(int sig, const struct sigaction *act,
			     struct sigaction *old, int *r)
{
	if (sig != ckpt.signal) {
		*r = program_sigaction(sig, act, old);
	} else if (in_vfork_child()) {
		*r = NEXT_FN(sigaction)(sig, act, old);
	} else if (!act || !wants_handler(act)) {
		/* SIG_DFL or SIG_IGN (git resets every signal before an
		 * exec): not a use of the signal, only recorded */
		ckpt_signal_record_action(act, old);
		*r = 0;
	} else {
		return 1;
	}
	return 0;
}

/* The checkpoint signal moved while a program's handler interrupted the
 * fast path: the same action again with every signal blocked (the
 * program's old action is the one the first attempt read). */
static int sigaction_again_blocked(int sig, const struct sigaction *act,
				   int *r)
{
	struct sigaction ignored;
	uint64_t mask;
	int e, moves;

	threads_block_all(&mask);
	moves = sigaction_unsplit(sig, act, &ignored, r);
	e = errno;
	threads_set_mask(mask);
	errno = e;
	return moves;
}

CKPT_WRAPPER int sigaction(int sig, const struct sigaction *act,
			   struct sigaction *old)
{
	unsigned moves_before;
	int r, e, moves;

	if (sig <= 0 || sig >= _NSIG)
		return NEXT_FN(sigaction)(sig, act, old);
	moves_before = threads_critical_begin();
	moves = sigaction_unsplit(sig, act, old, &r);
	e = errno;
	if (threads_critical_end(moves_before) && !moves && r == 0)
		moves = sigaction_again_blocked(sig, act, &r);
	if (moves)
		return move_for_program(sig, act, old);
	errno = e;
	return r;
}

/* siginterrupt's choice, for signal() (glibc keeps its own privately) */
static uint64_t interrupting;

static sighandler_t set_handler(int sig, sighandler_t handler, int flags,
				int mask_self)
{
	struct sigaction act, old;

	if (handler == SIG_ERR || sig <= 0 || sig >= _NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	if (mask_self)
		sigaddset(&act.sa_mask, sig);
	act.sa_flags = flags;
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

static int restarts(int sig)
{
	return sig <= 64 && (interrupting >> (sig - 1)) & 1 ? 0 : SA_RESTART;
}

/* glibc's signal() and its relatives call its sigaction internally,
 * past the wrapper above: done here instead. */
CKPT_WRAPPER sighandler_t signal(int sig, sighandler_t handler)
{
	return set_handler(sig, handler, restarts(sig), 1);
}

CKPT_WRAPPER sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return set_handler(sig, handler, restarts(sig), 1);
}

CKPT_WRAPPER sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER, 0);
}

CKPT_WRAPPER int sigignore(int sig)
{
	return set_handler(sig, SIG_IGN, 0, 0) == SIG_ERR ? -1 : 0;
}

CKPT_WRAPPER int siginterrupt(int sig, int flag)
{
	struct sigaction act;

	if (sig <= 0 || sig >= _NSIG || sigaction(sig, NULL, &act) < 0) {
		errno = EINVAL;
		return -1;
	}
	if (sig <= 64 && flag)
		interrupting |= 1ULL << (sig - 1);
	else if (sig <= 64)
		interrupting &= ~(1ULL << (sig - 1));
	if (flag)
		act.sa_flags &= ~SA_RESTART;
	else
		act.sa_flags |= SA_RESTART;
	return sigaction(sig, &act, NULL);
}

CKPT_WRAPPER sighandler_t sigset(int sig, sighandler_t disp)
{
	sigset_t one, before;
	struct sigaction act, old;

	sigemptyset(&one);
	if (sigaddset(&one, sig) < 0)
		return SIG_ERR;
	if (disp == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &one, &before) < 0 ||
		    sigaction(sig, NULL, &old) < 0)
			return SIG_ERR;
	} else {
		memset(&act, 0, sizeof(act));
		act.sa_handler = disp;
		sigemptyset(&act.sa_mask);
		if (sigaction(sig, &act, &old) < 0 ||
		    sigprocmask(SIG_UNBLOCK, &one, &before) < 0)
			return SIG_ERR;
	}
	return sigismember(&before, sig) ? SIG_HOLD : old.sa_handler;
}

static uint64_t word_of(const sigset_t *set)
{
	uint64_t w;

	memcpy(&w, set, sizeof(w));
	return w;
}

static void set_of(sigset_t *set, uint64_t w)
{
	sigemptyset(set);
	memcpy(set, &w, sizeof(w));
}

/* The thread's mask in the program's terms: the checkpoint signal's bit
 * is its wish, the kernel's is clear. glibc's own 32 and 33 are never
 * blocked. */
#define GLIBC_INTERNAL_SIGNALS ((1ULL << 31) | (1ULL << 32))

static uint64_t changed_mask(int how, uint64_t program, uint64_t set)
{
	if (how == SIG_BLOCK)
		return program | (set & ~GLIBC_INTERNAL_SIGNALS);
	if (how == SIG_UNBLOCK)
		return program & ~set;
	return set & ~GLIBC_INTERNAL_SIGNALS;
}

/* The slow way, with every signal blocked: after a move of the checkpoint
 * signal split the fast one. */
static void set_mask_blocked(int how, uint64_t set)
{
	uint64_t kernel;

	threads_block_all(&kernel);
	threads_set_mask(ckpt_signal_kernel_mask(
		changed_mask(how, ckpt_signal_program_mask(kernel), set)));
}

/* One system call, as the program's own: the kernel changes its mask
 * relative to the one it has (the checkpoint signal's bit left out, and
 * cleared on SIG_UNBLOCK), and the wish for the checkpoint signal follows
 * the program's request. Returns 0 or an errno value. */
static int change_mask(int how, const sigset_t *set, sigset_t *old)
{
	uint64_t req = set ? word_of(set) : 0, ours, kernel_old, kernel;
	uint64_t program_old;
	unsigned moves_before;

	if (set && how != SIG_BLOCK && how != SIG_UNBLOCK &&
	    how != SIG_SETMASK)
		return EINVAL;
	moves_before = threads_critical_begin();
	ours = ckpt_signal_bit();
	kernel = (how == SIG_UNBLOCK ? req | ours :
		  req & ~GLIBC_INTERNAL_SIGNALS & ~ours);
	syscall(SYS_rt_sigprocmask, set ? how : SIG_BLOCK, set ? &kernel :
		NULL, &kernel_old, 8);
	program_old = ckpt_signal_program_mask(kernel_old);
	if (set)
		ckpt_signal_restore_wish(changed_mask(how, program_old, req));
	if (threads_critical_end(moves_before) && set)
		set_mask_blocked(how, req);
	if (old)
		set_of(old, program_old);
	return 0;
}

CKPT_WRAPPER int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int r = change_mask(how, set, old);

	if (!r)
		return 0;
	errno = r;
	return -1;
}

CKPT_WRAPPER int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return change_mask(how, set, old);
}

CKPT_WRAPPER int sigpending(sigset_t *set)
{
	int r = NEXT_FN(sigpending)(set);

	if (r == 0)
		sigdelset(set, ckpt.signal);
	return r;
}

/* A signalfd never takes the checkpoint signal. */
CKPT_WRAPPER int signalfd(int fd, const sigset_t *mask, int flags)
{
	sigset_t copy;
	int r = NEXT_FN(signalfd)(fd, without_reserved(mask, &copy), flags);

	if (r >= 0)
		signalfd_reads_note(r);
	return r;
}

/* With every signal blocked until the kernel takes the mask, no move
 * comes between reading the checkpoint signal and waiting. A move while
 * waiting rewrites the mask it returns to: set again from the program's
 * view. */
static int suspend_once(const sigset_t *mask)
{
	uint64_t kernel, program;
	sigset_t copy;
	int r, e;

	threads_block_all(&kernel);
	program = ckpt_signal_program_mask(kernel);
	r = NEXT_FN(sigsuspend)(without_reserved(mask, &copy));
	e = errno;
	threads_set_mask(ckpt_signal_kernel_mask(program));
	errno = e;
	return r;
}

/* sigsuspend returns only for the program's own signals. */
CKPT_WRAPPER int sigsuspend(const sigset_t *mask)
{
	return RETRY_IF_CHECKPOINTED(suspend_once(mask));
}

static int with_virtual_sender(int sig, siginfo_t *si)
{
	if (sig > 0 && si && si->si_pid > 0 && signal_names_a_sender(sig, si->si_code))
		si->si_pid = vpid_virt_from_real(si->si_pid);
	return sig;
}

CKPT_WRAPPER int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	sigset_t copy;

	set = without_reserved(set, &copy);
	return with_virtual_sender(RETRY_IF_CHECKPOINTED(
		NEXT_FN(sigwaitinfo)(set, info)), info);
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A checkpoint interrupted the wait: wait for what is left of it. */
CKPT_WRAPPER int sigtimedwait(const sigset_t *set, siginfo_t *info,
			      const struct timespec *timeout)
{
	int64_t end = timeout ? monotonic_ns() + timeout->tv_sec * 1000000000LL
				+ timeout->tv_nsec : 0;
	struct timespec left;
	sigset_t copy;
	uint64_t before;
	int r;

	set = without_reserved(set, &copy);
	if (timeout)
		left = *timeout;
	for (;;) {
		before = ckpt_interrupts;
		r = NEXT_FN(sigtimedwait)(set, info, timeout ? &left : NULL);
		if (!ckpt_interrupted(r, before))
			return with_virtual_sender(r, info);
		if (timeout) {
			int64_t ns = end - monotonic_ns();

			if (ns <= 0) {
				errno = EAGAIN;
				return -1;
			}
			left.tv_sec = ns / 1000000000LL;
			left.tv_nsec = ns % 1000000000LL;
		}
	}
}

/* glibc's sigwait waits with an internal call: done here instead. */
CKPT_WRAPPER int sigwait(const sigset_t *set, int *sig)
{
	int r;

	do
		r = sigwaitinfo(set, NULL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno;
	*sig = r;
	return 0;
}
