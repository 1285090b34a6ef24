/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Keep the checkpoint signal invisible: the program cannot install a
 * handler for it, block it, or see it in its masks. A program that tries
 * gets EINVAL and one message telling how to move the signal elsewhere.
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

__attribute__((constructor)) static void resolve_next_signal(void)
{
	RESOLVE_NEXT(sigaction);
	RESOLVE_NEXT(signal);
	RESOLVE_NEXT(sigprocmask);
	RESOLVE_NEXT(pthread_sigmask);
	RESOLVE_NEXT(sigpending);
	RESOLVE_NEXT(sigsuspend);
	RESOLVE_NEXT(sigwaitinfo);
	RESOLVE_NEXT(sigtimedwait);
}

static void warn_reserved_once(const char *call)
{
	static int warned;

	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		ckpt_log("%s: signal %d is reserved by the checkpointer; "
			 "set CKPT_SIGNAL to another real-time signal for this "
			 "program", call, ckpt.signal);
}

typedef void (*siginfo_handler)(int, siginfo_t *, void *);

/* The program's SA_SIGINFO handler of each signal the trampoline serves. */
static siginfo_handler program_handlers[_NSIG];

/* Does si_pid name a process? (kill/sigqueue/tgkill/mq_notify senders,
 * and SIGCHLD's child; not timers, async I/O or SIGIO.) */
static int names_a_sender(int sig, const siginfo_t *si)
{
	if (sig == SIGCHLD && si->si_code > 0)
		return 1;
	return si->si_code == SI_USER || si->si_code == SI_QUEUE ||
	       si->si_code == SI_TKILL || si->si_code == SI_MESGQ;
}

static void translate_sender(int sig, siginfo_t *si, void *uc)
{
	siginfo_handler handler = sig > 0 && sig < _NSIG ?
		__atomic_load_n(&program_handlers[sig], __ATOMIC_ACQUIRE) : NULL;

	if (si && si->si_pid > 0 && names_a_sender(sig, si))
		si->si_pid = vpid_virt_from_real(si->si_pid);
	if (handler)
		handler(sig, si, uc);
}

static int wants_siginfo_handler(const struct sigaction *act)
{
	return (act->sa_flags & SA_SIGINFO) && act->sa_handler != SIG_DFL &&
	       act->sa_handler != SIG_IGN;
}

/* sigaction with the trampoline in place of a SA_SIGINFO handler; old
 * tells the program's handler. */
static int sigaction_translated(int sig, const struct sigaction *act,
				struct sigaction *old)
{
	siginfo_handler before = program_handlers[sig];
	struct sigaction copy;
	int r;

	if (act && wants_siginfo_handler(act)) {
		copy = *act;
		__atomic_store_n(&program_handlers[sig], act->sa_sigaction,
				 __ATOMIC_RELEASE);
		copy.sa_sigaction = translate_sender;
		act = &copy;
	}
	r = NEXT_FN(sigaction)(sig, act, old);
	if (r < 0 && act == &copy)
		__atomic_store_n(&program_handlers[sig], before,
				 __ATOMIC_RELEASE);
	if (r == 0 && old && (old->sa_flags & SA_SIGINFO) &&
	    old->sa_sigaction == translate_sender)
		old->sa_sigaction = before;
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

CKPT_WRAPPER int sigaction(int sig, const struct sigaction *act,
			   struct sigaction *old)
{
	struct sigaction copy;

	if (sig == ckpt.signal) {
		if (act) {
			warn_reserved_once("sigaction");
			errno = EINVAL;
			return -1;
		}
		if (old) {
			memset(old, 0, sizeof(*old));
			old->sa_handler = SIG_DFL;
		}
		return 0;
	}
	if (act) {
		copy = *act;
		sigdelset(&copy.sa_mask, ckpt.signal);
		act = &copy;
	}
	if (sig <= 0 || sig >= _NSIG)
		return NEXT_FN(sigaction)(sig, act, old);
	return sigaction_translated(sig, act, old);
}

CKPT_WRAPPER sighandler_t signal(int sig, sighandler_t handler)
{
	if (sig == ckpt.signal) {
		warn_reserved_once("signal");
		errno = EINVAL;
		return SIG_ERR;
	}
	return NEXT_FN(signal)(sig, handler);
}

CKPT_WRAPPER int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	int r = NEXT_FN(sigprocmask)(how, without_reserved(set, &copy), old);

	if (r == 0 && old)
		sigdelset(old, ckpt.signal);
	return r;
}

CKPT_WRAPPER int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	int r = NEXT_FN(pthread_sigmask)(how, without_reserved(set, &copy),
					 old);

	if (r == 0 && old)
		sigdelset(old, ckpt.signal);
	return r;
}

CKPT_WRAPPER int sigpending(sigset_t *set)
{
	int r = NEXT_FN(sigpending)(set);

	if (r == 0)
		sigdelset(set, ckpt.signal);
	return r;
}

/* sigsuspend returns only for the program's own signals. */
CKPT_WRAPPER int sigsuspend(const sigset_t *mask)
{
	sigset_t copy;

	return RETRY_IF_CHECKPOINTED(
		NEXT_FN(sigsuspend)(without_reserved(mask, &copy)));
}

static int with_virtual_sender(int sig, siginfo_t *si)
{
	if (sig > 0 && si && si->si_pid > 0 && names_a_sender(sig, si))
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
	unsigned before;
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
