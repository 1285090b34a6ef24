// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Compressed extents (CKPT_EXTENT_ZSTD, docs/image-format.md) back into
 * memory: read, decompressed straight to their address and hash-checked,
 * in parallel by the loader and up to LOADER_DECODE_THREADS - 1 threads
 * of its own. regions.c queues a region's compressed extents and waits
 * for them before it protects the region; the threads live for one such
 * batch and are gone before the hand-off.
 *
 * The decompressor is Debian's static libzstd, linked into the blob: it
 * runs on static contexts in the work area (ZSTD_initStaticDCtx, so no
 * malloc), on the loader's memcpy/memset, and reads a stack-protector
 * canary from a scratch TLS page. Only current zstd frames are accepted;
 * the legacy-format entry points libzstd refers to are stubs, so the
 * blob stays free of the legacy code and its relocations.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include "ckpt/hash.h"
#include "loader.h"
#include "../loader_abi.h"

#define JOBS_MAX		64
#define ZSTD_FRAME_MAGIC	0xFD2FB528u

enum decode_failure {
	DECODE_OK,
	DECODE_READ,		/* err: -errno, 0 = image truncated */
	DECODE_TOO_LARGE,	/* stored_len beyond any extent */
	DECODE_NOT_ZSTD,	/* no zstd frame at its offset */
	DECODE_CORRUPT,		/* zstd refused it: zstd_error */
	DECODE_SHORT,		/* decompressed to `got` bytes */
	DECODE_CHECKSUM,	/* hash of the result differs */
};

struct decode_job {
	const struct ckpt_extent *e;
	unsigned char *dst;
};

struct decode_thread {
	ZSTD_DCtx *dctx;
	unsigned char *in;		/* CKPT_EXTENT_MAX bytes */
	struct loader_thread thread;	/* helpers only */
};

static struct {
	const struct loader *l;
	unsigned nthreads;		/* 0: the image has no compressed extent */
	struct decode_thread thread[LOADER_DECODE_THREADS];
	struct decode_job job[JOBS_MAX];
	unsigned njobs;
	unsigned next;			/* next job to take (atomic) */
	int failed;			/* 1 once `failure` is set (atomic) */
	struct {
		const struct ckpt_extent *e;
		enum decode_failure why;
		long err;
		uint64_t got;
		const char *zstd_error;
	} failure;
} dec;

/* libzstd refers to the decoders of pre-1.0 formats; never reached,
 * since only frames with the current magic number are passed on. */
static void legacy_frame(void)
{
	loader_fail("internal error: a legacy zstd frame was decoded");
}

#define LEGACY_STUB(name) \
	void name(void); \
	void name(void) { legacy_frame(); }
#define LEGACY_STUBS(v) \
	LEGACY_STUB(ZSTDv0##v##_createDCtx) \
	LEGACY_STUB(ZSTDv0##v##_decompress_usingDict) \
	LEGACY_STUB(ZSTDv0##v##_findFrameSizeInfoLegacy) \
	LEGACY_STUB(ZSTDv0##v##_freeDCtx) \
	LEGACY_STUB(ZSTDv0##v##_getFrameParams) \
	LEGACY_STUB(ZBUFFv0##v##_createDCtx) \
	LEGACY_STUB(ZBUFFv0##v##_decompressContinue) \
	LEGACY_STUB(ZBUFFv0##v##_decompressInitDictionary) \
	LEGACY_STUB(ZBUFFv0##v##_freeDCtx)
LEGACY_STUBS(5)
LEGACY_STUBS(6)
LEGACY_STUBS(7)

/* Never called with static contexts; libzstd needs the symbols. */
void *malloc(size_t n);
void *calloc(size_t n, size_t size);
void free(void *p);
void __stack_chk_fail(void);

void *malloc(size_t n)
{
	(void)n;
	return NULL;
}

void *calloc(size_t n, size_t size)
{
	(void)n;
	(void)size;
	return NULL;
}

void free(void *p)
{
	(void)p;
}

void __stack_chk_fail(void)
{
	loader_fail("stack smashing detected while decompressing memory");
}

static unsigned online_cpus(void)
{
	uint64_t mask[16] = { 0 };
	long n = __syscall3(__NR_sched_getaffinity, 0, sizeof(mask),
			    (long)mask);
	unsigned count = 0;

	for (long i = 0; i < n / 8; i++)
		for (uint64_t m = mask[i]; m; m &= m - 1)
			count++;
	return count ? count : 1;
}

static int image_has_compressed_extents(const struct loader *l)
{
	for (uint32_t i = 0; i < l->hdr.nextents; i++)
		if (l->extents[i].encoding != CKPT_EXTENT_RAW)
			return 1;
	return 0;
}

/* A scratch TLS page for the canary reads of libzstd's code. */
static void give_scratch_tls(struct loader *l)
{
	uint64_t page = work_alloc(l, LOADER_PAGE);
	long err;

	*(uint64_t *)page = page;	/* the TCB's self pointer */
	*(uint64_t *)(page + ARCH_TLS_SCRATCH_CANARY) = 0x2f8a6c15e3d94b07ULL;
	err = arch_set_tls(page);
	if (err)
		loader_fail("setting a TLS base for the decompressor failed: %s",
			    errno_text(err));
}

/* Before the point of no return: contexts, buffers and stacks in the
 * work area (ckpt_restart made it LOADER_DECODE_WORK larger). */
void extent_decode_prepare(struct loader *l)
{
	size_t dctx_size = ZSTD_estimateDCtxSize();
	unsigned n = online_cpus();

	dec.l = l;
	if (!image_has_compressed_extents(l))
		return;
	if (dctx_size > LOADER_DECODE_DCTX)
		loader_fail("the zstd decompressor needs %lu bytes of context, "
			    "the loader reserves %llu", (uint64_t)dctx_size,
			    LOADER_DECODE_DCTX);
	give_scratch_tls(l);
	dec.nthreads = n < LOADER_DECODE_THREADS ? n : LOADER_DECODE_THREADS;
	for (unsigned i = 0; i < dec.nthreads; i++) {
		struct decode_thread *t = &dec.thread[i];
		uint64_t mem = work_alloc(l, LOADER_DECODE_DCTX +
					  CKPT_EXTENT_MAX +
					  LOADER_DECODE_STACK);

		t->dctx = ZSTD_initStaticDCtx((void *)mem, LOADER_DECODE_DCTX);
		if (!t->dctx)
			loader_fail("preparing the zstd decompressor failed");
		t->in = (unsigned char *)(mem + LOADER_DECODE_DCTX);
		t->thread.stack_top = t->in + CKPT_EXTENT_MAX +
				      LOADER_DECODE_STACK;
	}
}

static void fail_job(const struct ckpt_extent *e, enum decode_failure why,
		     long err, uint64_t got, const char *zstd_error)
{
	int expected = 0;

	if (!__atomic_compare_exchange_n(&dec.failed, &expected, 1, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	dec.failure.e = e;
	dec.failure.why = why;
	dec.failure.err = err;
	dec.failure.got = got;
	dec.failure.zstd_error = zstd_error;
}

/* The stored bytes of e into buf: 0, or -errno (0 read: -1000). */
static long read_stored(const struct ckpt_extent *e, unsigned char *buf)
{
	uint64_t done = 0;
	long got;

	while (done < e->stored_len) {
		got = sys_pread(dec.l->image_fd, buf + done,
				e->stored_len - done, e->file_offset + done);
		if (got == -4)	/* EINTR */
			continue;
		if (got <= 0)
			return got ? got : -1000;
		done += got;
	}
	return 0;
}

static void decode_one(struct decode_thread *t, const struct decode_job *j)
{
	const struct ckpt_extent *e = j->e;
	uint32_t magic;
	size_t n;
	long err;

	if (e->stored_len > CKPT_EXTENT_MAX || e->stored_len < 4)
		return fail_job(e, DECODE_TOO_LARGE, 0, 0, NULL);
	err = read_stored(e, t->in);
	if (err)
		return fail_job(e, DECODE_READ, err == -1000 ? 0 : err, 0,
				NULL);
	magic = t->in[0] | t->in[1] << 8 | t->in[2] << 16 |
		(uint32_t)t->in[3] << 24;
	if (magic != ZSTD_FRAME_MAGIC)
		return fail_job(e, DECODE_NOT_ZSTD, 0, 0, NULL);
	n = ZSTD_decompressDCtx(t->dctx, j->dst, e->len, t->in,
				e->stored_len);
	if (ZSTD_isError(n))
		return fail_job(e, DECODE_CORRUPT, 0, 0, ZSTD_getErrorName(n));
	if (n != e->len)
		return fail_job(e, DECODE_SHORT, 0, n, NULL);
	if (ckpt_hash64(j->dst, e->len, 0) != e->hash)
		return fail_job(e, DECODE_CHECKSUM, 0, 0, NULL);
}

static void decode_jobs(void *arg)
{
	struct decode_thread *t = arg;
	unsigned i;

	while ((i = __atomic_fetch_add(&dec.next, 1, __ATOMIC_ACQ_REL)) <
	       dec.njobs && !__atomic_load_n(&dec.failed, __ATOMIC_ACQUIRE))
		decode_one(t, &dec.job[i]);
}

static void report_failure(void)
{
	const struct ckpt_extent *e = dec.failure.e;
	uint64_t a = e->addr, end = e->addr + e->len;

	switch (dec.failure.why) {
	case DECODE_READ:
		loader_fail("memory %lx-%lx: reading its compressed data (%u "
			    "bytes at image offset %lu) failed: %s", a, end,
			    e->stored_len, e->file_offset,
			    dec.failure.err ? errno_text(dec.failure.err) :
					      "image truncated");
	case DECODE_TOO_LARGE:
		loader_fail("memory %lx-%lx: its compressed size %u is "
			    "impossible: the image is corrupt", a, end,
			    e->stored_len);
	case DECODE_NOT_ZSTD:
		loader_fail("memory %lx-%lx: no zstd frame at image offset "
			    "%lu: the saved data is corrupt", a, end,
			    e->file_offset);
	case DECODE_CORRUPT:
		loader_fail("memory %lx-%lx: decompressing its data failed "
			    "(zstd: %s): the saved data is corrupt", a, end,
			    dec.failure.zstd_error);
	case DECODE_SHORT:
		loader_fail("memory %lx-%lx: its data decompressed to %lu "
			    "bytes, not %lu: the saved data is corrupt", a, end,
			    dec.failure.got, e->len);
	default:
		loader_fail("memory %lx-%lx: checksum mismatch: the saved data "
			    "is corrupt", a, end);
	}
}

/* Decode every queued extent, the loader's own thread included; a batch
 * of one needs no helper. */
void extent_decode_wait(const struct loader *l)
{
	unsigned helpers = dec.njobs > 1 ? dec.nthreads - 1 : 0;

	(void)l;
	if (!dec.njobs)
		return;
	if (helpers > dec.njobs - 1)
		helpers = dec.njobs - 1;
	dec.next = 0;
	for (unsigned i = 1; i <= helpers; i++)	/* else the others do its
						   share */
		loader_thread_start(&dec.thread[i].thread, decode_jobs,
				    &dec.thread[i]);
	decode_jobs(&dec.thread[0]);
	for (unsigned i = 1; i <= helpers; i++)
		loader_thread_join(&dec.thread[i].thread,
				   "a decompression thread");
	dec.njobs = 0;
	if (dec.failed)
		report_failure();
}

/* A compressed extent for dst (its address, or where the caller wants
 * its bytes); done by extent_decode_wait at the latest. */
void extent_decode_queue(const struct loader *l, const struct ckpt_extent *e,
			 unsigned char *dst)
{
	if (e->encoding != CKPT_EXTENT_ZSTD)
		loader_fail("memory %lx-%lx: unknown encoding %u", e->addr,
			    e->addr + e->len, e->encoding);
	if (!dec.nthreads)
		loader_fail("memory %lx-%lx: compressed, but no decompressor "
			    "was prepared", e->addr, e->addr + e->len);
	if (dec.njobs == JOBS_MAX)
		extent_decode_wait(l);
	dec.job[dec.njobs].e = e;
	dec.job[dec.njobs].dst = dst;
	dec.njobs++;
	progress_add(e->len);	/* queued: decoded by the next wait */
}
