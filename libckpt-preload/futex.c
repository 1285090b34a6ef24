// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Bounded futex waits for the words the in-process API shares between the
 * program's threads, the manager and the hook thread.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include "../protocol/client_internal.h"
#include "internal.h"

/* One wait while *addr == val, at most until deadline_ms (a signal or a
 * spurious wake returns earlier: the caller looks at its condition
 * again). 0, or -ETIMEDOUT once the deadline has passed. */
int ckpt_futex_wait_until(int *addr, int val, int64_t deadline_ms)
{
	int64_t left = deadline_ms - ckpt_cc_now_ms();
	struct timespec ts;

	if (left <= 0)
		return -ETIMEDOUT;
	ts.tv_sec = left / 1000;
	ts.tv_nsec = (left % 1000) * 1000000L;
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
	return 0;
}

void ckpt_futex_wake(int *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL,
		0);
}
