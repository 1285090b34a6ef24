/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libckpt's own descriptors (the coordinator connection, an image being
 * committed, the journal of created files: log.c's ckpt_mark_own_fd) live
 * among the program's. Daemons close every descriptor they did not open
 * as they start (screen, bwrap, sshd, gpg-agent...): close() in a loop up
 * to the descriptor limit, close_range(2) or closefrom(3). That took the
 * coordinator connection away (the process joined again, or not at all
 * when it happened during its HELLO), and worse, the number then named a
 * file of the program's, which libckpt's cleanup of the lost connection
 * closed in turn.
 *
 * So the program cannot close them: close() of one fails with EBADF, as
 * it would had the descriptor never been there; close_range and
 * closefrom close the rest of their range around them. libckpt's own
 * calls (their return address lies in libckpt) go through unchanged. A
 * dup2 onto one of them is not refused (a program choosing a number that
 * high is rare; libckpt finds its connection lost and joins again).
 */
#include <unistd.h>
#include "wrappers.h"

DEFINE_NEXT(close);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_close(void)
{
	RESOLVE_NEXT(close);
}

static int refused(void)
{
	errno = EBADF;
	return -1;
}

/* close_range over [first, last] leaving libckpt's descriptors open: the
 * kernel's call once for each stretch between them. */
static int close_range_around_own(unsigned int first, unsigned int last,
				  unsigned int flags)
{
	unsigned int from = first;

	while (from <= last) {
		int own = ckpt_next_own_fd((int)(from > (unsigned)INT32_MAX ?
						 INT32_MAX : from));
		unsigned int to = own < 0 || (unsigned int)own > last ?
				  last : (unsigned int)own - 1;
		long r;

		if (own >= 0 && (unsigned int)own == from) {
			from++;
			continue;
		}
		r = ckpt_syscall(SYS_close_range, from, to, flags);
		if (r < 0)
			return (int)r;
		if (to == last)
			break;
		from = to + 2;	/* past the descriptor of libckpt's */
		if (from == 0)
			break;	/* wrapped around past ~0U */
	}
	return 0;
}

CKPT_WRAPPER int close(int fd)
{
	if (ckpt_is_own_fd(fd) && !called_from_libckpt(CALL_SITE()))
		return refused();
	return NEXT_FN(close)(fd);
}

CKPT_WRAPPER int close_range(unsigned int first, unsigned int last,
			     int flags)
{
	if (called_from_libckpt(CALL_SITE()) || first > last)
		return (int)ckpt_syscall(SYS_close_range, first, last, flags);
	return close_range_around_own(first, last, (unsigned int)flags);
}

CKPT_WRAPPER void closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	if (close_range_around_own((unsigned int)lowfd, ~0U, 0) == 0)
		return;
	/* as glibc: close one by one where close_range is refused */
	for (int fd = lowfd, max = (int)sysconf(_SC_OPEN_MAX); fd < max; fd++)
		if (!ckpt_is_own_fd(fd))
			NEXT_FN(close)(fd);
}

/* syscall(SYS_close) and syscall(SYS_close_range): wrappers/pid.c's
 * syscall wrapper sends them here. 1 with *result set when the call was
 * one of them. */
int close_by_syscall(long nr, const long *a, const void *site, long *result)
{
	if (called_from_libckpt(site))
		return 0;
	if (nr == SYS_close && ckpt_is_own_fd((int)a[0])) {
		*result = refused();
		return 1;
	}
	if (nr == SYS_close_range && (unsigned int)a[0] <= (unsigned int)a[1]) {
		*result = close_range_around_own((unsigned int)a[0],
						 (unsigned int)a[1],
						 (unsigned int)a[2]);
		return 1;
	}
	return 0;
}
