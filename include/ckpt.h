/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ckpt.h: the in-process API of ckpt, for programs that want to take part
 * in their own checkpoints (docs/embedding.md).
 *
 * Header only. A program built with it needs no ckpt library at link time
 * and runs unchanged without ckpt: each call looks libckpt up once, with
 * dlsym(RTLD_DEFAULT, "ckpt_api"), in the running process; libckpt is
 * there only when the program was started by ckpt_launch (or restarted
 * by ckpt_restart). Without it ckpt_is_enabled() returns 0 and every
 * other call returns -ENOTSUP ("not under ckpt"); nothing else happens.
 *
 * Every call returns 0 (or a value >= 0) on success, -errno on failure.
 * All are thread-safe; none may be called from a signal handler.
 */
#ifndef CKPT_H
#define CKPT_H

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ckpt_checkpoint() results */
#define CKPT_CONTINUING	0	/* the checkpoint is durable; running on */
#define CKPT_RESTARTED	1	/* running in a process restarted from it */

/* Events of ckpt_hook_add(). */
enum ckpt_event {
	/* a checkpoint is about to stop the program: every thread still
	 * runs (none is stopped yet) */
	CKPT_EVENT_BEFORE_CHECKPOINT = 1,
	/* the program runs again after that checkpoint (written, or
	 * failed): every thread has been released */
	CKPT_EVENT_RESUME = 2,
	/* the program runs again in a process restarted from an image:
	 * every thread has been recreated and released */
	CKPT_EVENT_RESTART = 3,
};

typedef void (*ckpt_hook_fn)(enum ckpt_event event, void *arg);

/* The ABI between this header and libckpt: a table found by name. Later
 * versions only append members; `size` says which ones exist. */
struct ckpt_api {
	uint32_t size;			/* sizeof(struct ckpt_api) of libckpt */
	uint32_t version;		/* CKPT_API_VERSION of libckpt */
	int (*is_enabled)(void);
	int64_t (*generation)(void);
	int (*restarts)(void);
	int (*checkpoint_dir)(char *buf, size_t len);
	int (*image_path)(char *buf, size_t len);
	int (*checkpoint)(void);
	int (*delay_begin)(void);
	int (*delay_end)(void);
	int (*hook_add)(enum ckpt_event event, ckpt_hook_fn fn, void *arg);
	/* appended */
	int (*snapshot)(uint64_t *id);
};
#define CKPT_API_VERSION 1

#ifdef RTLD_DEFAULT
#define CKPT_API_RTLD_DEFAULT_ RTLD_DEFAULT
#else
#define CKPT_API_RTLD_DEFAULT_ ((void *)0)	/* glibc's and musl's value */
#endif

/* libckpt's table, or NULL when the program does not run under ckpt. */
static inline const struct ckpt_api *ckpt_api_(void)
{
	static const struct ckpt_api *api;
	static int looked;

	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&api, (const struct ckpt_api *)
				 dlsym(CKPT_API_RTLD_DEFAULT_, "ckpt_api"),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&api, __ATOMIC_RELAXED);
}

/* Whether libckpt's table has the member `m`. */
#define CKPT_API_HAS_(a, m)                                               \
	((a) && (a)->size >= offsetof(struct ckpt_api, m) + sizeof((a)->m))

/* 1 when the program runs under ckpt (its checkpoints can be taken), 0
 * otherwise. */
static inline int ckpt_is_enabled(void)
{
	const struct ckpt_api *a = ckpt_api_();

	return CKPT_API_HAS_(a, is_enabled) ? a->is_enabled() : 0;
}

/* The generation of the last checkpoint this process is in that is
 * durable (in a restarted process: the image's), 0 before the first. */
static inline int64_t ckpt_generation(void)
{
	const struct ckpt_api *a = ckpt_api_();

	return CKPT_API_HAS_(a, generation) ? a->generation() : -ENOTSUP;
}

/* How many times this process was restarted from an image. */
static inline int ckpt_restarts(void)
{
	const struct ckpt_api *a = ckpt_api_();

	return CKPT_API_HAS_(a, restarts) ? a->restarts() : -ENOTSUP;
}

/* The directory this process writes its images into ($CKPT_DIR,
 * ckpt_launch --ckptdir, or the directory the program started in; a
 * restart may name another). -ERANGE when len is too small. */
static inline int ckpt_checkpoint_dir(char *buf, size_t len)
{
	const struct ckpt_api *a = ckpt_api_();

	return CKPT_API_HAS_(a, checkpoint_dir) ? a->checkpoint_dir(buf, len)
						: -ENOTSUP;
}

/* The path of this process's last durable image ("" before the first). */
static inline int ckpt_image_path(char *buf, size_t len)
{
	const struct ckpt_api *a = ckpt_api_();

	return CKPT_API_HAS_(a, image_path) ? a->image_path(buf, len)
					    : -ENOTSUP;
}

/* Checkpoint the whole computation now (every process of it, as
 * `ckpt_command --checkpoint` does) and return once every image is
 * durable: CKPT_CONTINUING, or CKPT_RESTARTED when this is a process
 * restarted from that checkpoint. The hooks of the checkpoint have run
 * when it returns. -EDEADLK inside a delay section or a hook, -EBUSY when
 * a delay section or a hook held the checkpoint too long, other -errno
 * when the checkpoint failed (the previous images stay). */
static inline int ckpt_checkpoint(void)
{
	const struct ckpt_api *a = ckpt_api_();

	return CKPT_API_HAS_(a, checkpoint) ? a->checkpoint() : -ENOTSUP;
}

/* A critical section: a checkpoint requested while one is open in any
 * thread waits until every section has ended (at most half the
 * coordinator's suspend phase timeout, 2.5 s by default; then that
 * checkpoint fails and the program runs on). Sections nest; each ends in
 * the thread that began it. ckpt_delay_begin() itself waits while a
 * checkpoint is in progress, from its before-checkpoint hooks to the end
 * of its resume or restart hooks (at most 60 s: -ETIMEDOUT). */
static inline int ckpt_delay_begin(void)
{
	const struct ckpt_api *a = ckpt_api_();

	return CKPT_API_HAS_(a, delay_begin) ? a->delay_begin() : -ENOTSUP;
}

/* -EINVAL when this thread has no section open. */
static inline int ckpt_delay_end(void)
{
	const struct ckpt_api *a = ckpt_api_();

	return CKPT_API_HAS_(a, delay_end) ? a->delay_end() : -ENOTSUP;
}

/* Call fn(event, arg) at each checkpoint event, on ckpt's hook thread
 * (one thread for all hooks: a lock taken in a before-checkpoint hook can
 * be released in the resume or restart hook). Before-checkpoint hooks run
 * in the order they were added, resume and restart hooks in the reverse
 * order. -EINVAL for an unknown event or a NULL fn, -ENOSPC beyond 64
 * hooks. */
static inline int ckpt_hook_add(enum ckpt_event event, ckpt_hook_fn fn,
				void *arg)
{
	const struct ckpt_api *a = ckpt_api_();

	return CKPT_API_HAS_(a, hook_add) ? a->hook_add(event, fn, arg)
					  : -ENOTSUP;
}

/* Freeze a copy of the whole computation in memory (a snapshot,
 * docs/embedding.md) and return once it is kept: CKPT_CONTINUING with *id
 * its id, or CKPT_RESTARTED in a process restored from it (`ckpt_command
 * --restore ID`). Hooks run as for a checkpoint. -EDEADLK as
 * ckpt_checkpoint(), -ENOSPC when the coordinator keeps as many snapshots
 * as it may (16), -EBUSY while a checkpoint runs, other -errno when the
 * forked copy failed (the program runs on). */
static inline int ckpt_snapshot(uint64_t *id)
{
	const struct ckpt_api *a = ckpt_api_();

	return CKPT_API_HAS_(a, snapshot) ? a->snapshot(id) : -ENOTSUP;
}

#ifdef __cplusplus
}
#endif

#endif /* CKPT_H */
