/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Blocking calls that a signal handler interrupts with EINTR even under
 * SA_RESTART (sleeps, poll/select/epoll, pause): retried when the
 * interruption was a checkpoint, with the time that was left.
 */
#include <poll.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>
#include "wrappers.h"

DEFINE_NEXT(nanosleep);
DEFINE_NEXT(clock_nanosleep);
DEFINE_NEXT(pause);
DEFINE_NEXT(poll);
DEFINE_NEXT(epoll_wait);
DEFINE_NEXT(epoll_pwait);
DEFINE_NEXT(select);
DEFINE_NEXT(sem_wait);
DEFINE_NEXT(sem_trywait);
DEFINE_NEXT(sem_clockwait);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_sleep(void)
{
	RESOLVE_NEXT(nanosleep);
	RESOLVE_NEXT(clock_nanosleep);
	RESOLVE_NEXT(pause);
	RESOLVE_NEXT(poll);
	RESOLVE_NEXT(epoll_wait);
	RESOLVE_NEXT(epoll_pwait);
	RESOLVE_NEXT(select);
	RESOLVE_NEXT(sem_wait);
	RESOLVE_NEXT(sem_trywait);
	RESOLVE_NEXT(sem_clockwait);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int remaining_ms(int timeout, int64_t start)
{
	int64_t left;

	if (timeout < 0)
		return timeout;
	left = timeout - (now_ms() - start);
	return left < 0 ? 0 : (int)left;
}

CKPT_WRAPPER int nanosleep(const struct timespec *req, struct timespec *rem)
{
	struct timespec left = *req, mine;
	uint64_t before;
	int r;

	do {
		before = ckpt_interrupts;
		r = NEXT_FN(nanosleep)(&left, &mine);
		left = mine;
	} while (ckpt_interrupted(r, before));
	if (r < 0 && rem)
		*rem = mine;
	return r;
}

CKPT_WRAPPER int clock_nanosleep(clockid_t clk, int flags,
				 const struct timespec *req,
				 struct timespec *rem)
{
	struct timespec left = *req, mine;
	uint64_t before;
	int r;

	do {
		before = ckpt_interrupts;
		r = NEXT_FN(clock_nanosleep)(clk, flags, &left, &mine);
		if (r == EINTR && ckpt_only_checkpoint_since(before, 0)) {
			if (!(flags & TIMER_ABSTIME))
				left = mine;
			continue;
		}
		break;
	} while (1);
	if (r == EINTR && rem && !(flags & TIMER_ABSTIME))
		*rem = mine;
	return r;
}

CKPT_WRAPPER unsigned int sleep(unsigned int seconds)
{
	struct timespec req = { seconds, 0 }, rem = { 0, 0 };

	if (nanosleep(&req, &rem) < 0)
		return rem.tv_sec + (rem.tv_nsec > 0);
	return 0;
}

CKPT_WRAPPER int usleep(useconds_t usec)
{
	struct timespec req = { usec / 1000000, (usec % 1000000) * 1000 };

	return nanosleep(&req, NULL);
}

CKPT_WRAPPER int pause(void)
{
	return RETRY_IF_CHECKPOINTED(NEXT_FN(pause)());
}

CKPT_WRAPPER int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	int64_t start = now_ms();

	return RETRY_IF_CHECKPOINTED(
		NEXT_FN(poll)(fds, n, remaining_ms(timeout, start)));
}

CKPT_WRAPPER int epoll_wait(int epfd, struct epoll_event *ev, int max,
			    int timeout)
{
	int64_t start = now_ms();

	return RETRY_IF_CHECKPOINTED(NEXT_FN(epoll_wait)(
		epfd, ev, max, remaining_ms(timeout, start)));
}

CKPT_WRAPPER int epoll_pwait(int epfd, struct epoll_event *ev, int max,
			     int timeout, const sigset_t *mask)
{
	int64_t start = now_ms();

	return RETRY_IF_CHECKPOINTED(NEXT_FN(epoll_pwait)(
		epfd, ev, max, remaining_ms(timeout, start), mask));
}

/* select: Linux updates the timeout with the time left, so a retry
 * continues where the interrupted call stopped. The fd sets are
 * overwritten on error, so they are restored first. */
CKPT_WRAPPER int select(int n, fd_set *rd, fd_set *wr, fd_set *ex,
			struct timeval *tv)
{
	fd_set r0, w0, e0;
	uint64_t before;
	int r;

	if (rd)
		r0 = *rd;
	if (wr)
		w0 = *wr;
	if (ex)
		e0 = *ex;
	for (;;) {
		before = ckpt_interrupts;
		r = NEXT_FN(select)(n, rd, wr, ex, tv);
		if (!ckpt_interrupted(r, before))
			return r;
		if (rd)
			*rd = r0;
		if (wr)
			*wr = w0;
		if (ex)
			*ex = e0;
	}
}

/* Semaphores: a unit taken is an event of the lock order under the gdb
 * extension (wrappers/lock_order.c); the ops return error numbers. */
static int error_number(int rc)
{
	return rc == 0 ? 0 : errno;
}

static int sem_take(void *sem)
{
	return error_number(RETRY_IF_CHECKPOINTED(NEXT_FN(sem_wait)(sem)));
}

static int sem_try_take(void *sem)
{
	return error_number(NEXT_FN(sem_trywait)(sem));
}

static int sem_take_until(void *sem, clockid_t clock,
			  const struct timespec *abstime)
{
	return error_number(RETRY_IF_CHECKPOINTED(
		NEXT_FN(sem_clockwait)(sem, clock, abstime)));
}

static void sem_give_back(void *sem)
{
	sem_post(sem);
}

static const struct lock_ops sem_ops = {
	.take = sem_take,
	.try_take = sem_try_take,
	.take_until = sem_take_until,
	.give_back = sem_give_back,
};

static int sem_result(int rc)
{
	if (rc == 0)
		return 0;
	errno = rc;
	return -1;
}

CKPT_WRAPPER int sem_wait(sem_t *sem)
{
	return sem_result(lock_order_take(&sem_ops, sem, LOCK_EV_MUTEX, 0,
					  NULL, CALL_SITE()));
}

CKPT_WRAPPER int sem_trywait(sem_t *sem)
{
	return sem_result(lock_order_take(&sem_ops, sem, LOCK_EV_TRYLOCK, 0,
					  NULL, CALL_SITE()));
}

CKPT_WRAPPER int sem_timedwait(sem_t *sem, const struct timespec *abs)
{
	return sem_result(lock_order_take(&sem_ops, sem, LOCK_EV_TIMEDLOCK,
					  CLOCK_REALTIME, abs, CALL_SITE()));
}

CKPT_WRAPPER int sem_clockwait(sem_t *sem, clockid_t clock,
			       const struct timespec *abs)
{
	return sem_result(lock_order_take(&sem_ops, sem, LOCK_EV_TIMEDLOCK,
					  clock, abs, CALL_SITE()));
}
