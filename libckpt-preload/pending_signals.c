/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pending signals. The kernel keeps them only in the live process, so at a
 * checkpoint each stopped thread takes its own (thread-directed) pending
 * signals out with rt_sigtimedwait and puts them straight back with
 * rt_tgsigqueueinfo, keeping a copy (with siginfo) in memory; the manager
 * does the same for process-directed ones. A restarted process queues the
 * copies again before any thread runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

static struct pending_signals process_pending;

/* Bit mask of "SigPnd:" (thread) or "ShdPnd:" (process) in
 * /proc/self/task/<tid>/status. */
static __attribute__((noinline)) uint64_t pending_mask(pid_t tid,
						       const char *field)
{
	char path[64], buf[2048], *p;

	ckpt_fmt(path, sizeof(path), "/proc/self/task/%d/status", tid);
	if (ckpt_read_small_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, field);
	return p ? strtoull(p + strlen(field), NULL, 16) : 0;
}

static int sigset_from_mask(uint64_t mask, sigset_t *set)
{
	int any = 0;

	sigemptyset(set);
	for (int sig = 1; sig <= 64; sig++)
		if ((mask >> (sig - 1)) & 1 && sig != ckpt.signal &&
		    sig != SIGKILL && sig != SIGSTOP) {
			sigaddset(set, sig);
			any = 1;
		}
	return any;
}

static void queue_one(const siginfo_t *si, pid_t tid)
{
	pid_t pid = ckpt_real_getpid();

	if (tid)
		syscall(SYS_rt_tgsigqueueinfo, pid, tid, si->si_signo, si);
	else
		syscall(SYS_rt_sigqueueinfo, pid, si->si_signo, si);
}

/* Take out what `field` lists as pending, record it, put it back. Kept
 * out of line: the common path runs in the signal handler on the
 * program's thread stacks, which may be small. */
static __attribute__((noinline)) void capture(struct pending_signals *ps, const char *field, int thread)
{
	struct timespec zero = { 0, 0 };
	pid_t tid = ckpt_real_gettid();
	sigset_t set;

	ps->count = 0;
	if (!sigset_from_mask(pending_mask(tid, field), &set))
		return;
	while (ps->count < CKPT_MAX_PENDING) {
		siginfo_t *si = &ps->info[ps->count];

		if (syscall(SYS_rt_sigtimedwait, &set, si, &zero, 8) <= 0)
			break;
		ps->count++;
	}
	for (int i = 0; i < ps->count; i++)
		queue_one(&ps->info[i], thread ? tid : 0);
}

void pending_capture_thread(struct pending_signals *ps)
{
	sigset_t any;

	/* the common case, nothing pending, costs one system call */
	if (syscall(SYS_rt_sigpending, &any, 8) == 0 && !sigset_from_mask(
		    *(uint64_t *)&any, &any)) {
		ps->count = 0;
		return;
	}
	capture(ps, "SigPnd:", 1);
}

void pending_capture_process(void)
{
	capture(&process_pending, "ShdPnd:", 0);
}

void pending_requeue_thread(const struct pending_signals *ps)
{
	for (int i = 0; i < ps->count; i++)
		queue_one(&ps->info[i], ckpt_real_gettid());
}

void pending_requeue_process(void)
{
	for (int i = 0; i < process_pending.count; i++)
		queue_one(&process_pending.info[i], 0);
}

/* The signals a capture holds, as a mask (bit n-1: signal n). */
uint64_t pending_signals_mask(const struct pending_signals *ps)
{
	uint64_t mask = 0;

	for (int i = 0; i < ps->count; i++)
		if (ps->info[i].si_signo > 0 && ps->info[i].si_signo <= 64)
			mask |= 1ULL << (ps->info[i].si_signo - 1);
	return mask;
}

uint64_t pending_process_mask(void)
{
	return pending_signals_mask(&process_pending);
}
