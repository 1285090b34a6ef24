/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Short writes a checkpoint would cause. A blocking write to a pipe,
 * socket or terminal that a signal handler interrupts after some bytes
 * went through returns that short count, SA_RESTART or not; without the
 * signal it would have written everything. Programs that ignore the count
 * (Python's os.write, sys.stdout.buffer.write under `python3 -u` or
 * PYTHONUNBUFFERED) then lose the tail. When the interruption was a
 * checkpoint and the descriptor blocks, the wrappers write the rest, so
 * the program sees what it sees without ckpt.
 */
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "wrappers.h"

DEFINE_NEXT(write);
DEFINE_NEXT(writev);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_write(void)
{
	RESOLVE_NEXT(write);
	RESOLVE_NEXT(writev);
}

static int fd_blocks(int fd)
{
	long flags = syscall(SYS_fcntl, fd, F_GETFL);

	return flags >= 0 && !(flags & O_NONBLOCK);
}

/* The rest of a write of `count` bytes of which `done` went through
 * before a checkpoint interrupted it: the total written. An error or a
 * short count of another cause ends it (the program's next call sees
 * the error, as it would without ckpt). */
static ssize_t write_rest(int fd, const char *buf, size_t count, size_t done)
{
	while (done < count) {
		uint64_t before = ckpt_interrupts;
		ssize_t n = NEXT_FN(write)(fd, buf + done, count - done);

		if (n < 0 && ckpt_interrupted_restartable(n, before))
			continue;
		if (n <= 0)
			break;
		done += n;
		if (!ckpt_only_checkpoint_since(before, 0))
			break;	/* short for a reason of its own */
	}
	return done;
}

/* A short count the checkpoint alone caused: a handler of the program
 * interrupting the write makes it short without ckpt too. */
static int short_by_checkpoint(int fd, ssize_t n, size_t count,
			       uint64_t before)
{
	return n > 0 && (size_t)n < count &&
	       ckpt_only_checkpoint_since(before, 0) && fd_blocks(fd);
}

/* Evaluate `call` (a ssize_t expression) again for as long as it fails
 * with an EINTR that a checkpoint caused; `before` keeps the interrupt
 * count of the last try. */
#define WRITE_RETRYING(call, before)                                      \
	({                                                                \
		ssize_t n_;                                               \
		do {                                                      \
			(before) = ckpt_interrupts;                       \
			n_ = (call);                                      \
		} while (ckpt_interrupted_restartable(n_, (before)));     \
		n_;                                                       \
	})

CKPT_WRAPPER ssize_t write(int fd, const void *buf, size_t count)
{
	uint64_t before;
	ssize_t n = WRITE_RETRYING(NEXT_FN(write)(fd, buf, count), before);

	if (short_by_checkpoint(fd, n, count, before))
		return write_rest(fd, buf, count, n);
	return n;
}

static size_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t total = 0;

	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	return total;
}

/* Finish a writev cut short by a checkpoint: the remaining bytes of each
 * buffer, in order, with write. */
static ssize_t writev_rest(int fd, const struct iovec *iov, int iovcnt,
			   size_t done)
{
	size_t skip = done;

	for (int i = 0; i < iovcnt; i++) {
		size_t len = iov[i].iov_len, wrote;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		wrote = write_rest(fd, (const char *)iov[i].iov_base + skip,
				   len - skip, 0);
		done += wrote;
		if (wrote < len - skip)
			break;
		skip = 0;
	}
	return done;
}

CKPT_WRAPPER ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	uint64_t before;
	ssize_t n = WRITE_RETRYING(NEXT_FN(writev)(fd, iov, iovcnt), before);

	if (n > 0 && short_by_checkpoint(fd, n, iov_total(iov, iovcnt), before))
		return writev_rest(fd, iov, iovcnt, n);
	return n;
}
