/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Keep the checkpoint signal invisible: the program cannot install a
 * handler for it, block it, or see it in its masks. A program that tries
 * gets EINVAL and one message telling how to move the signal elsewhere.
 */
#include <signal.h>
#include <string.h>
#include "wrappers.h"

DEFINE_NEXT(sigaction);
DEFINE_NEXT(signal);
DEFINE_NEXT(sigprocmask);
DEFINE_NEXT(pthread_sigmask);
DEFINE_NEXT(sigpending);
DEFINE_NEXT(sigsuspend);

__attribute__((constructor)) static void resolve_next_signal(void)
{
	RESOLVE_NEXT(sigaction);
	RESOLVE_NEXT(signal);
	RESOLVE_NEXT(sigprocmask);
	RESOLVE_NEXT(pthread_sigmask);
	RESOLVE_NEXT(sigpending);
	RESOLVE_NEXT(sigsuspend);
}

static void warn_reserved_once(const char *call)
{
	static int warned;

	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		ckpt_log("%s: signal %d is reserved by the checkpointer; "
			 "set CKPT_SIGNAL to another real-time signal for this "
			 "program", call, ckpt.signal);
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
	return NEXT_FN(sigaction)(sig, act, old);
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
