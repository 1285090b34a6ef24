/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Extents into their stored form: hashed and, with compression, made a
 * zstd frame each (docs/image-format.md, "Extents"), in order, by the
 * manager thread and helper threads together, while the application's
 * threads are stopped.
 *
 * The helpers are raw clones (ckpt_clone_thread), made for one image and
 * gone before it is complete: pthread_create would take glibc's locks
 * (and malloc for the thread's TLS), which a stopped thread may hold, and
 * would go through libckpt's wrapper and thread registry. A raw clone
 * shares the manager's TLS, so a helper calls nothing that uses it:
 * zstd on a static context (no malloc), the hash, and futexes through
 * ckpt_syscall_noerrno (errno is the manager's). Their stacks and buffers
 * are mapped after /proc/self/maps was read: not part of the image.
 *
 * Up to WINDOW extents are in work at a time; the manager writes them
 * out in order and does the next free one itself while it waits.
 * Incompressible memory is found early: samples of an extent are
 * compressed first, and the first one that does not shrink has the
 * extent stored raw (random memory costs one 16 KiB sample per 4 MiB).
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zstd.h>
#include "ckpt/hash.h"
#include "internal.h"

#define ZSTD_LEVEL		1
#define MAX_HELPERS		7
#define WINDOW			16
#define HELPER_STACK		(256UL << 10)
#define SAMPLES			4
#define SAMPLE_LEN		(16UL << 10)
/* An extent is kept compressed only if that saves a sixteenth. */
#define WORTH(len)		((len) - (len) / 16)

struct slot {
	uint64_t job;			/* extent index it holds */
	int ready;			/* job + 1 once encoded (futex) */
	unsigned char *out;		/* CKPT_EXTENT_MAX: the zstd frame */
	unsigned char *copy;		/* CKPT_EXTENT_MAX: a changing
					   extent's snapshot */
	const void *data;		/* what to write */
	struct ckpt_extent result;	/* hash, encoding, stored_len */
};

struct encoder_ctx {
	void *cctx_mem;
	size_t cctx_size;
	ZSTD_CCtx *cctx;
	int tid;			/* helper: cleared at its exit */
	void *stack;
};

struct extent_encoder {
	const struct ckpt_extent *e;
	uint64_t n;
	int compress;
	uint64_t next;			/* next job to claim */
	int consumed;			/* jobs written out (futex word) */
	int stop;
	int nctx;			/* manager + helpers */
	struct slot slot[WINDOW];
	struct encoder_ctx ctx[1 + MAX_HELPERS];
};

/* libzstd calls these tracing hooks when a program defines them (the
 * zstd tool does, for --trace): defined here, hidden, so that a
 * checkpoint never calls into the program's. */
unsigned long long ZSTD_trace_compress_begin(const void *cctx);
void ZSTD_trace_compress_end(unsigned long long ctx, const void *trace);

unsigned long long ZSTD_trace_compress_begin(const void *cctx)
{
	(void)cctx;
	return 0;
}

void ZSTD_trace_compress_end(unsigned long long ctx, const void *trace)
{
	(void)ctx;
	(void)trace;
}

static long futex(int *word, int op, int val, long timeout_ns)
{
	struct timespec ts = { timeout_ns / 1000000000L,
			       timeout_ns % 1000000000L };

	return ckpt_syscall_noerrno(SYS_futex, (long)word, op, val,
				    timeout_ns ? (long)&ts : 0, 0, 0);
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Do the samples shrink, each by a sixteenth? Random memory (encrypted,
 * already compressed) is told after compressing the first SAMPLE_LEN
 * bytes of it. */
static int samples_shrink(ZSTD_CCtx *c, const unsigned char *src,
			  uint64_t len, unsigned char *out)
{
	if (len <= SAMPLES * SAMPLE_LEN)
		return 1;
	for (int i = 0; i < SAMPLES; i++) {
		uint64_t at = (len - SAMPLE_LEN) / (SAMPLES - 1) * i;
		size_t n = ZSTD_compressCCtx(c, out, CKPT_EXTENT_MAX, src + at,
					     SAMPLE_LEN, ZSTD_LEVEL);

		if (ZSTD_isError(n) || n >= WORTH(SAMPLE_LEN))
			return 0;
	}
	return 1;
}

static void encode(struct extent_encoder *x, struct encoder_ctx *c,
		   struct slot *s, uint64_t job)
{
	const struct ckpt_extent *e = &x->e[job];
	const unsigned char *src = (const void *)(uintptr_t)e->addr;
	size_t n;

	/* The manager's stack and the dead stack below a parked thread
	 * change while the image is written: one snapshot is hashed and
	 * stored (threads.c, threads_park_area_overlaps). */
	if (manager_stack_overlaps(e->addr, e->len) ||
	    threads_park_area_overlaps(e->addr, e->len)) {
		memcpy(s->copy, src, e->len);
		src = s->copy;
	}
	s->result = *e;
	s->result.hash = ckpt_hash64(src, e->len, 0);
	s->result.encoding = CKPT_EXTENT_RAW;
	s->result.stored_len = e->len;
	s->data = src;
	if (!x->compress || e->encoding != CKPT_EXTENT_ZSTD ||
	    !samples_shrink(c->cctx, src, e->len, s->out))
		return;
	n = ZSTD_compressCCtx(c->cctx, s->out, WORTH(e->len), src, e->len,
			      ZSTD_LEVEL);
	if (ZSTD_isError(n))		/* did not shrink enough: raw */
		return;
	s->result.encoding = CKPT_EXTENT_ZSTD;
	s->result.stored_len = n;
	s->data = s->out;
}

/* Claim the next job the window allows and encode it: 1 if one was
 * done, 0 if none is free now. */
static int encode_one(struct extent_encoder *x, struct encoder_ctx *c)
{
	uint64_t job = __atomic_load_n(&x->next, __ATOMIC_ACQUIRE);
	struct slot *s;

	do {
		if (job >= x->n || job >= (uint64_t)__atomic_load_n(
			    &x->consumed, __ATOMIC_ACQUIRE) + WINDOW)
			return 0;
	} while (!__atomic_compare_exchange_n(&x->next, &job, job + 1, 0,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	s = &x->slot[job % WINDOW];
	s->job = job;
	encode(x, c, s, job);
	__atomic_store_n(&s->ready, (int)job + 1, __ATOMIC_RELEASE);
	futex(&s->ready, FUTEX_WAKE_PRIVATE, 1, 0);
	return 1;
}

/* The helper's loop; its context knows the encoder through helper_arg. */
struct helper_arg {
	struct extent_encoder *x;
	struct encoder_ctx *c;
};

static void helper_loop(void *p)
{
	struct helper_arg *a = p;
	struct extent_encoder *x = a->x;

	while (!__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) {
		int seen = __atomic_load_n(&x->consumed, __ATOMIC_ACQUIRE);

		if (encode_one(x, a->c))
			continue;
		if (__atomic_load_n(&x->next, __ATOMIC_ACQUIRE) >= x->n)
			break;
		/* the window is full: wait for the manager to write */
		futex(&x->consumed, FUTEX_WAIT_PRIVATE, seen, 100000000L);
	}
}

static int ctx_init(struct encoder_ctx *c)
{
	c->cctx_size = ZSTD_estimateCCtxSize(ZSTD_LEVEL);
	c->cctx_mem = map_anon(c->cctx_size);
	if (!c->cctx_mem)
		return -ENOMEM;
	c->cctx = ZSTD_initStaticCCtx(c->cctx_mem, c->cctx_size);
	return c->cctx ? 0 : -ENOMEM;
}

static struct helper_arg helper_args[MAX_HELPERS];

static int start_helper(struct extent_encoder *x, struct encoder_ctx *c,
			struct helper_arg *a)
{
	const unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES |
		CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
		CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	sigset_t all, old;
	long tid;

	c->stack = map_anon(HELPER_STACK);
	if (!c->stack)
		return -ENOMEM;
	a->x = x;
	a->c = c;
	/* no signal is ever delivered to a helper */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	tid = ckpt_clone_thread(flags, (char *)c->stack + HELPER_STACK,
				&c->tid, &c->tid, 0, helper_loop, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return tid < 0 ? (int)tid : 0;
}

static int online_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	return CPU_COUNT(&set);
}

int extent_encoder_start(struct extent_encoder **out,
			 const struct ckpt_extent *e, uint64_t n, int compress)
{
	struct extent_encoder *x = map_anon(sizeof(*x));
	int helpers = 0, r = 0;

	*out = x;
	if (!x)
		return -ENOMEM;
	x->e = e;
	x->n = n;
	x->compress = compress;
	for (int i = 0; i < WINDOW && r == 0; i++) {
		x->slot[i].copy = map_anon(CKPT_EXTENT_MAX);
		x->slot[i].out = compress ? map_anon(CKPT_EXTENT_MAX) :
					    x->slot[i].copy;
		if (!x->slot[i].copy || !x->slot[i].out)
			r = -ENOMEM;
	}
	if (compress) {
		helpers = online_cpus() - 1;
		if (helpers > MAX_HELPERS)
			helpers = MAX_HELPERS;
		if ((uint64_t)helpers > n)
			helpers = n;
		r = r ? r : ctx_init(&x->ctx[0]);
	}
	x->nctx = 1;
	for (int i = 1; i <= helpers && r == 0; i++) {
		r = ctx_init(&x->ctx[i]);
		if (r == 0)
			r = start_helper(x, &x->ctx[i], &helper_args[i - 1]);
		if (r == 0)
			x->nctx++;
	}
	return r;
}

/* Extent `job` (in order, each once; its encoding says whether it may be
 * compressed) in its stored form: its hash,
 * encoding and stored_len in *result, the bytes to write in *data, valid
 * until the next call. */
int extent_encoder_next(struct extent_encoder *x, uint64_t job,
			struct ckpt_extent *result, const void **data)
{
	struct slot *s = &x->slot[job % WINDOW];

	if (job) {	/* the previous one is written: its slot is free */
		__atomic_store_n(&x->consumed, (int)job, __ATOMIC_RELEASE);
		futex(&x->consumed, FUTEX_WAKE_PRIVATE, MAX_HELPERS, 0);
	}
	while (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE) != (int)job + 1) {
		if (encode_one(x, &x->ctx[0]))
			continue;
		futex(&s->ready, FUTEX_WAIT_PRIVATE,
		      __atomic_load_n(&s->ready, __ATOMIC_ACQUIRE),
		      100000000L);
	}
	*result = s->result;
	*data = s->data;
	return 0;
}

/* Every helper gone (bounded wait), every buffer unmapped. */
void extent_encoder_stop(struct extent_encoder *x)
{
	if (!x)
		return;
	__atomic_store_n(&x->stop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&x->consumed, (int)x->n, __ATOMIC_RELEASE);
	futex(&x->consumed, FUTEX_WAKE_PRIVATE, MAX_HELPERS, 0);
	for (int i = 1; i < x->nctx; i++) {
		int tid;

		for (int t = 0; t < 100 && (tid = __atomic_load_n(
				&x->ctx[i].tid, __ATOMIC_ACQUIRE)); t++)
			futex(&x->ctx[i].tid, FUTEX_WAIT, tid, 100000000L);
	}
	for (int i = 0; i <= MAX_HELPERS; i++) {
		if (x->ctx[i].cctx_mem)
			munmap(x->ctx[i].cctx_mem, x->ctx[i].cctx_size);
		/* a helper that never ended keeps its stack */
		if (x->ctx[i].stack && !x->ctx[i].tid)
			munmap(x->ctx[i].stack, HELPER_STACK);
	}
	for (int i = 0; i < WINDOW; i++) {
		if (x->slot[i].out && x->slot[i].out != x->slot[i].copy)
			munmap(x->slot[i].out, CKPT_EXTENT_MAX);
		if (x->slot[i].copy)
			munmap(x->slot[i].copy, CKPT_EXTENT_MAX);
	}
	munmap(x, sizeof(*x));
}
