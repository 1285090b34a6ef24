/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Many SOL_SOCKET options of many sockets read with a few system calls:
 * io_uring's socket command SOCKET_URING_OP_GETSOCKOPT (Linux 6.7+,
 * SOL_SOCKET only), a ring-full per io_uring_enter. A checkpoint of a
 * process holding 1,000 TCP connections asks 7,000 of them, and the
 * bytes waiting to be read on each (SOCKET_URING_OP_SIOCINQ, FIONREAD's
 * twin; docs/performance.md). Where io_uring is missing or refused (older
 * kernels, seccomp filters, io_uring_disabled) the caller asks each
 * socket itself.
 *
 * Raw system calls and mmap'd rings, no liburing: libckpt runs this with
 * the program's threads stopped. The ring is made and closed per call.
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

#ifndef SOCKET_URING_OP_SIOCINQ
#define SOCKET_URING_OP_SIOCINQ 0
#endif
#ifndef SOCKET_URING_OP_GETSOCKOPT
#define SOCKET_URING_OP_GETSOCKOPT 2
#endif

#define RING_ENTRIES 1024U

struct ring {
	int fd;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;
	unsigned *sq_tail, *sq_mask, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
};

static void ring_close(struct ring *r)
{
	if (r->sqes && r->sqes != MAP_FAILED)
		munmap(r->sqes, r->sqes_len);
	if (r->cq_map && r->cq_map != MAP_FAILED && r->cq_map != r->sq_map)
		munmap(r->cq_map, r->cq_len);
	if (r->sq_map && r->sq_map != MAP_FAILED)
		munmap(r->sq_map, r->sq_len);
	if (r->fd >= 0)
		close(r->fd);
}

static int ring_open(struct ring *r)
{
	struct io_uring_params p;

	memset(r, 0, sizeof(*r));
	memset(&p, 0, sizeof(p));
	r->fd = syscall(SYS_io_uring_setup, RING_ENTRIES, &p);
	if (r->fd < 0)
		return -errno;
	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		if (r->cq_len > r->sq_len)
			r->sq_len = r->cq_len;
		r->cq_len = r->sq_len;
	}
	r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	r->cq_map = (p.features & IORING_FEAT_SINGLE_MMAP) ? r->sq_map :
		    mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sq_map == MAP_FAILED || r->cq_map == MAP_FAILED ||
	    r->sqes == MAP_FAILED) {
		ring_close(r);
		return -ENOMEM;
	}
	r->sq_tail = (void *)((char *)r->sq_map + p.sq_off.tail);
	r->sq_mask = (void *)((char *)r->sq_map + p.sq_off.ring_mask);
	r->sq_array = (void *)((char *)r->sq_map + p.sq_off.array);
	r->cq_head = (void *)((char *)r->cq_map + p.cq_off.head);
	r->cq_tail = (void *)((char *)r->cq_map + p.cq_off.tail);
	r->cq_mask = (void *)((char *)r->cq_map + p.cq_off.ring_mask);
	r->cqes = (void *)((char *)r->cq_map + p.cq_off.cqes);
	return 0;
}

/* The getsockopt command for rd (the sqe's level, optname, optlen and
 * optval fields of Linux 6.7 sit where older headers name addr,
 * file_index and addr3), or the SIOCINQ one (no arguments; its answer
 * is the cqe's result). */
static void fill_sqe(struct io_uring_sqe *sqe, const struct sockopt_read *rd,
		     uint64_t index)
{
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = rd->fd;
	sqe->user_data = index;
	if (rd->siocinq) {
		sqe->cmd_op = SOCKET_URING_OP_SIOCINQ;
		return;
	}
	sqe->cmd_op = SOCKET_URING_OP_GETSOCKOPT;
	sqe->addr = (uint64_t)SOL_SOCKET | (uint64_t)(uint32_t)rd->name << 32;
	sqe->file_index = rd->len;
	sqe->addr3 = (uint64_t)(uintptr_t)rd->val;
}

/* Submit at(first..first+n) (n <= RING_ENTRIES) and collect every answer: they
 * come inline (getsockopt does not block); a ring that takes nothing
 * and answers nothing is an error, not a wait. */
static int run_batch(struct ring *r, struct sockopt_read *(*at)(size_t i),
		     size_t first, unsigned n)
{
	unsigned tail = *r->sq_tail, mask = *r->sq_mask, got = 0, sent = 0;
	int idle = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned slot = (tail + i) & mask;

		fill_sqe(&r->sqes[slot], at(first + i), i);
		r->sq_array[slot] = slot;
	}
	__atomic_store_n(r->sq_tail, tail + n, __ATOMIC_RELEASE);
	while (got < n) {
		unsigned head = *r->cq_head, ctail;
		long k = syscall(SYS_io_uring_enter, r->fd, n - sent, n - got,
				 IORING_ENTER_GETEVENTS, NULL, 0);

		if (k < 0 && errno != EINTR)
			return -errno;
		if (k > 0)
			sent += k;
		ctail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
		if (k <= 0 && head == ctail && ++idle > 100)
			return -EIO;
		for (; head != ctail; head++, got++) {
			const struct io_uring_cqe *c =
				&r->cqes[head & *r->cq_mask];

			if (c->user_data < n)
				at(first + c->user_data)->res = c->res;
		}
		__atomic_store_n(r->cq_head, head, __ATOMIC_RELEASE);
	}
	return 0;
}

/* Each at(i)->res, i < n: the option's length, or -errno (the kernel
 * refused it, or io_uring could not ask: the caller asks those itself).
 * 0, or -errno when no ring could be made (none asked). */
int sockopt_batch_read(struct sockopt_read *(*at)(size_t i), size_t n)
{
	struct ring r;
	int err;

	for (size_t i = 0; i < n; i++)
		at(i)->res = -EOPNOTSUPP;
	if (n == 0)
		return 0;
	err = ring_open(&r);
	if (err < 0)
		return err;
	for (size_t done = 0; done < n && err == 0;) {
		unsigned k = n - done > RING_ENTRIES ? RING_ENTRIES :
						       (unsigned)(n - done);

		err = run_batch(&r, at, done, k);
		done += k;
	}
	ring_close(&r);
	return err;
}
