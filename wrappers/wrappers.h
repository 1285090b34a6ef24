/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wrapper discipline: every wrapper is exported with CKPT_WRAPPER and
 * reaches the function it replaces through NEXT_FN (dlsym RTLD_NEXT, looked
 * up once). Wrappers that can be interrupted by the checkpoint signal
 * retry when ckpt_interrupted() says the interruption was ours, so no
 * EINTR caused by a checkpoint reaches the program.
 */
#ifndef CKPT_WRAPPERS_H
#define CKPT_WRAPPERS_H

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include "../libckpt-preload/internal.h"

#define CKPT_WRAPPER __attribute__((visibility("default")))

/* The next definition of a wrapped function. Each wrapper file declares
 * its pointers with DEFINE_NEXT and resolves them all in a constructor
 * (RESOLVE_NEXT): a first lookup later would run dlsym on whatever thread
 * calls first, on its stack, which may be small. The lazy fallback covers
 * calls from other libraries' constructors that run before ours. */
#define DEFINE_NEXT(name) static __typeof__(&name) next_##name
#define NEXT_FN(name)                                                     \
	((__typeof__(&name))ckpt_next_symbol((void **)&next_##name, #name))
#define RESOLVE_NEXT(name) ((void)NEXT_FN(name))

static inline void *ckpt_next_symbol(void **slot, const char *name)
{
	if (!*slot)
		*slot = dlsym(RTLD_NEXT, name);
	return *slot;
}

/* What came since `before` (ckpt_interrupts): 1 when the checkpoint
 * signal did and no handler of the program did that the call must end
 * for: any handler for a call the kernel never restarts (sleeps, waits
 * for events or signals), one without SA_RESTART for a call it restarts
 * (write, wait4). The program must see the EINTR its own signal causes
 * (a pause() waiting for it returns), also when a checkpoint came in the
 * same interruption. */
static inline int ckpt_only_checkpoint_since(uint64_t before, int restarts)
{
	uint64_t came = ckpt_interrupts - before;
	uint64_t handlers = restarts ? came / CKPT_INTR_HANDLER_NORESTART :
				       came / CKPT_INTR_HANDLER_RESTART;

	return (came & 0xffffffffULL) && !handlers;
}

/* True when a call the kernel never restarts, started with interrupt
 * state `before`, failed with EINTR because of a checkpoint alone. */
static inline int ckpt_interrupted(long rc, uint64_t before)
{
	return rc == -1 && errno == EINTR &&
	       ckpt_only_checkpoint_since(before, 0);
}

/* The same for a call the kernel restarts after an SA_RESTART handler. */
static inline int ckpt_interrupted_restartable(long rc, uint64_t before)
{
	return rc == -1 && errno == EINTR &&
	       ckpt_only_checkpoint_since(before, 1);
}

/* Evaluate `call` (an int-returning expression) again for as long as
 * `interrupted` (one of the two above) says a checkpoint alone made it
 * fail with EINTR. */
#define RETRY_WHILE_CHECKPOINTED(interrupted, call)                       \
	({                                                                \
		uint64_t before_;                                         \
		int rc_;                                                  \
		do {                                                      \
			before_ = ckpt_interrupts;                        \
			rc_ = (call);                                     \
		} while (interrupted(rc_, before_));                      \
		rc_;                                                      \
	})

/* A call the kernel never restarts after a handler (sleeps, pause). */
#define RETRY_IF_CHECKPOINTED(call)                                       \
	RETRY_WHILE_CHECKPOINTED(ckpt_interrupted, call)
/* A call the kernel restarts after an SA_RESTART handler (wait4). */
#define RETRY_IF_CHECKPOINTED_RESTARTABLE(call)                           \
	RETRY_WHILE_CHECKPOINTED(ckpt_interrupted_restartable, call)

/* The checkpoint signal blocked in this thread; returns the mask before. */
static inline sigset_t ckpt_block_checkpoints(void)
{
	sigset_t old;

	threads_mask_ckpt_signal(SIG_BLOCK, &old);
	return old;
}

static inline void ckpt_restore_mask(const sigset_t *old)
{
	int e = errno;

	syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, _NSIG / 8);
	errno = e;
}

/*
 * Evaluate `expr` (translating ids, one system call that does not block,
 * translating back) with the checkpoint signal blocked, so no checkpoint,
 * and so no restart, falls between a translation and its use. The pid
 * wrappers of DMTCP hold a checkpoint lock for the same reason.
 */
#define WITHOUT_CHECKPOINT(expr)                                          \
	({                                                                \
		sigset_t old_ = ckpt_block_checkpoints();                 \
		__typeof__(expr) r_ = (expr);                             \
		ckpt_restore_mask(&old_);                                 \
		r_;                                                       \
	})

/* A spin lock held for a few instructions and a system call or two (the
 * records of record_inputs.c and lock_order.c): no futex of its own. */
static inline void wrappers_spin_lock(int *busy)
{
	while (__atomic_exchange_n(busy, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static inline void wrappers_spin_unlock(int *busy)
{
	__atomic_store_n(busy, 0, __ATOMIC_RELEASE);
}

/* lock_order.c: the order of lock events, recorded and replayed (on
 * with the recording of inputs). A wrapper brackets the real call:
 * lock_order_begin (0: not ordered, call as usual; 1: ordered, and when
 * t.replaying the thread's turn has come and t.recorded is what the call
 * returned in the recording), then lock_order_end with the result. */
enum lock_event_kind {
	LOCK_EV_MUTEX = 1,
	LOCK_EV_TRYLOCK,
	LOCK_EV_TIMEDLOCK,
	LOCK_EV_COND,
	LOCK_EV_CREATE,
	LOCK_EV_BARRIER,	/* the return from pthread_barrier_wait */
};
struct lock_turn {
	int kind;
	int replaying;
	int recorded;
	const void *object;
	const void *site;
};
int lock_order_begin(struct lock_turn *t, int kind, const void *object,
		     const void *site);
uint32_t lock_order_end(struct lock_turn *t, int result);
int lock_order_replaying(void);
int lock_order_overtaken(struct lock_turn *t);
void lock_order_wait_turn(struct lock_turn *t);
void lock_order_name_thread(uint32_t number);
extern volatile uint32_t ckpt_lock_order_events;	/* the next event */
const char *lock_event_name(int kind);
#define CALL_SITE() __builtin_return_address(0)

/* A call made by libckpt itself (in a program's thread): not the
 * program's, neither recorded nor ordered. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern char _end[] __attribute__((visibility("hidden")));
static inline int called_from_libckpt(const void *site)
{
	return (const char *)site >= __ehdr_start &&
	       (const char *)site < _end;
}

/* A kind of lock, for lock_order_take: each returns 0 or an error
 * number (give_back: the lock was just taken; undo it). */
struct lock_ops {
	int (*take)(void *obj);
	int (*try_take)(void *obj);
	int (*take_until)(void *obj, clockid_t clock,
			  const struct timespec *abstime);
	void (*give_back)(void *obj);
};
int lock_order_take(const struct lock_ops *ops, void *obj, int kind,
		    clockid_t clock, const struct timespec *abstime,
		    const void *site);

/* locks.c: take a mutex as the program's call would, not ordered */
int locks_mutex_lock(pthread_mutex_t *m);

/* close.c: syscall(2) asked to close a descriptor of libckpt's? */
int close_by_syscall(long nr, const long *a, const void *site, long *result);

/* signal.c: does si_pid of this signal and si_code name a process? */
int signal_names_a_sender(int sig, int code);

#endif /* CKPT_WRAPPERS_H */
