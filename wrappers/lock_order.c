/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The order in which threads take pthread mutexes, return from condition
 * waits and create threads: recorded during a forward run and enforced
 * when the run is re-executed from a snapshot, so a race-free
 * multi-threaded program reaches the same states again. On only with the
 * recording of inputs (CKPT_RECORD_INPUTS=PATH, set by the gdb extension:
 * docs/reversible-debugging.md); the record is PATH.<vpid>.locks.
 *
 * Locks are pthread mutexes and rwlocks (wrappers/locks.c) and
 * semaphores (wrappers/sleep.c), each through a struct lock_ops.
 * Events are numbered in one sequence for the process. The entries live
 * in the file (outside the image: those written after a snapshot survive
 * its restore), the number of the next event is a variable in memory,
 * saved and restored with the snapshot. A thread about to take a lock
 * finds the entry of the next event: none, it takes the lock and appends
 * one (recording); its own, it takes the lock and the sequence moves on
 * (replay); another thread's, it waits for its turn. An entry that does
 * not match what the thread does (another lock, another call site, a
 * different trylock result), or a turn that never comes, is a
 * divergence: reported (ckpt_lock_order_divergence_text, read by the
 * extension), and the record is cut there and goes on live.
 *
 * Threads are named by a number that replays too: 0 for the first, the
 * number of its creation event + 1 for the others. Calls made by libckpt
 * itself are not ordered.
 */
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/futex.h>
#include "wrappers.h"

struct lock_entry {
	uint32_t thread;	/* the thread's number */
	uint32_t kind;		/* enum lock_event_kind */
	uint64_t object;	/* the lock's (condition's) address */
	uint64_t site;		/* the program's call */
	int32_t result;		/* what the call returned */
	uint32_t pad;
};

/* The extension's view (dist/gdb/ckpt-gdb.py reads and sets these). */
__attribute__((visibility("default"), used))
volatile uint32_t ckpt_lock_order_events;	/* events done: the cursor */
__attribute__((visibility("default"), used))
volatile int ckpt_lock_order_divergences;
__attribute__((visibility("default"), used))
char ckpt_lock_order_divergence_text[256];
/* trap (ckpt_debugger_event) once event N is done; -1: never */
__attribute__((visibility("default"), used))
volatile int64_t ckpt_lock_order_trap_at = -1;
/* trap whenever a thread comes to an event */
__attribute__((visibility("default"), used))
volatile int ckpt_lock_order_trap_enter;
/* compare these bytes at each event: the last event that saw them
 * changed is ckpt_lock_order_changed_at (reverse-watch) */
__attribute__((visibility("default"), used))
volatile uint64_t ckpt_lock_order_watch_addr;
__attribute__((visibility("default"), used))
volatile int ckpt_lock_order_watch_len;
__attribute__((visibility("default"), used))
unsigned char ckpt_lock_order_watch_copy[64];
__attribute__((visibility("default"), used))
volatile int64_t ckpt_lock_order_changed_at = -1;

static __thread uint32_t thread_number __attribute__((tls_model(
	"initial-exec")));
static int state;		/* 0 unknown, 1 on, -1 off */
static int log_fd = -1;	/* libckpt's own: not in images */
static uint32_t log_count;	/* entries in the file, as of the last open */
static int busy;		/* spin lock */
static int turn_rounds = 200;	/* 100 ms waits before a divergence */
static int sleepers;		/* threads asleep on the sequence */

static void lock(void)
{
	wrappers_spin_lock(&busy);
}

static void unlock(void)
{
	wrappers_spin_unlock(&busy);
}

static int lock_order_on(void)
{
	const char *t;

	if (ckpt_internal_thread)
		return 0;
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE))
		return state > 0;
	t = getenv("CKPT_LOCK_ORDER_TIMEOUT");
	if (t && atoi(t) > 0)
		turn_rounds = atoi(t) * 10;
	__atomic_store_n(&state, record_inputs_path() ? 1 : -1,
			 __ATOMIC_RELEASE);
	return state > 0;
}

/* Under lock(). The descriptor is libckpt's own (never saved): after a
 * restart it is gone, and opened again here. */
static int open_log(void)
{
	char path[1100];
	off_t size;

	if (log_fd >= 0)
		return log_fd;
	ckpt_fmt(path, sizeof(path), "%s.%d.locks", record_inputs_path(),
		 (int)ckpt.vpid);
	log_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (log_fd < 0) {
		ckpt_log("lock order: open %s: %s; not recording", path,
			 strerror(errno));
		__atomic_store_n(&state, -1, __ATOMIC_RELEASE);
		return -1;
	}
	ckpt_mark_own_fd(log_fd, 1);
	size = lseek(log_fd, 0, SEEK_END);
	log_count = size > 0 ? (uint32_t)(size / sizeof(struct lock_entry)) : 0;
	return log_fd;
}

/* Replayed entries are read ENTRY_CACHE at a time: one pread for many
 * events. The copy is dropped whenever the file may no longer say the
 * same: a cut, an append inside it, a restart (the copy in memory is then
 * the snapshot's, the file newer), a fork. */
#define ENTRY_CACHE 256
static struct lock_entry cached[ENTRY_CACHE];
static uint32_t cached_from, cached_count;

static void forget_cached(void)
{
	cached_count = 0;
}

/* Under lock(): entry n of the record, if there is one. */
static int entry_at(uint32_t n, struct lock_entry *e)
{
	ssize_t got;

	if (n - cached_from < cached_count) {
		*e = cached[n - cached_from];
		return 1;
	}
	got = pread(log_fd, cached, sizeof(cached), (off_t)n * sizeof(*e));
	if (got < (ssize_t)sizeof(*e)) {
		forget_cached();
		return 0;
	}
	cached_from = n;
	cached_count = (uint32_t)((size_t)got / sizeof(*e));
	*e = cached[0];
	return 1;
}

/* A waiting thread sleeps on the sequence with the bit of its number:
 * an event done wakes only the thread whose turn is next (and those whose
 * numbers share its bit), not every waiter. */
static uint32_t turn_bit(uint32_t number)
{
	return 1u << (number % 32);
}

/* 0, or ETIMEDOUT after 100 ms (clock of the system call: not the
 * recorded one) */
static int sleep_until_turn(uint32_t at)
{
	struct timespec until;
	int rc;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &until);
	until.tv_nsec += 100 * 1000 * 1000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	/* counted before the futex reads the sequence: a waker that moved
	 * the sequence on and saw no sleeper left us a changed value */
	__atomic_add_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
	rc = syscall(SYS_futex, &ckpt_lock_order_events,
		     FUTEX_WAIT_BITSET_PRIVATE, at, &until, NULL,
		     turn_bit(thread_number)) < 0 ? errno : 0;
	__atomic_sub_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
	return rc;
}

/* Under lock(), the sequence moved on to `next`: wake its thread, unless
 * it is this one (a run of its events) or no thread sleeps: most events
 * of a replay cost no system call. */
static void wake_next(uint32_t next)
{
	struct lock_entry e;
	uint32_t bits = FUTEX_BITSET_MATCH_ANY;

	if (!__atomic_load_n(&sleepers, __ATOMIC_SEQ_CST))
		return;
	if (next < log_count && entry_at(next, &e)) {
		if (e.thread == thread_number)
			return;
		bits = turn_bit(e.thread);
	}
	syscall(SYS_futex, &ckpt_lock_order_events, FUTEX_WAKE_BITSET_PRIVATE,
		INT32_MAX, NULL, NULL, bits);
}

static void wake_waiters(void)
{
	syscall(SYS_futex, &ckpt_lock_order_events, FUTEX_WAKE_PRIVATE,
		INT32_MAX, NULL, NULL, 0);
}

/* Under lock(): the record is cut at the current event and goes on live;
 * every waiting thread goes on. */
static void diverge(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diverge(const char *fmt, ...)
{
	uint32_t at = ckpt_lock_order_events;
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	ckpt_fmt(ckpt_lock_order_divergence_text,
		 sizeof(ckpt_lock_order_divergence_text),
		 "the lock order differs at event %u: %s", at, why);
	ckpt_log("lock order: %s; recording from here",
		 ckpt_lock_order_divergence_text);
	ckpt_lock_order_divergences++;
	if (ftruncate(log_fd, (off_t)at * sizeof(struct lock_entry)) < 0)
		ckpt_log("lock order: truncate: %s", strerror(errno));
	log_count = at;
	forget_cached();
	wake_waiters();
}

/* Under lock(), with the entry of the next event ours: does it say what
 * the thread does now? */
static int entry_matches(const struct lock_entry *e,
			 const struct lock_turn *t)
{
	if (e->kind == (uint32_t)t->kind && e->object == (uint64_t)t->object &&
	    e->site == (uint64_t)t->site)
		return 1;
	diverge("thread %u %s %p (call at %p); the recording has %s %#llx "
		"(call at %#llx): the threads took another path (an "
		"unsynchronized race?)", thread_number,
		lock_event_name(t->kind), t->object, t->site,
		lock_event_name(e->kind), (unsigned long long)e->object,
		(unsigned long long)e->site);
	return 0;
}

/* 1 and the recorded result in t when the event is replayed (our turn
 * has come), 0 when it is live (the record ends here). */
static int wait_for_turn(struct lock_turn *t)
{
	int rounds = 0;
	struct lock_entry e;

	for (;;) {
		uint32_t at;

		lock();
		at = ckpt_lock_order_events;
		if (open_log() < 0 || at >= log_count || !entry_at(at, &e)) {
			unlock();
			return 0;
		}
		if (e.thread == thread_number) {
			int ok = entry_matches(&e, t);

			unlock();
			t->recorded = e.result;
			return ok;
		}
		if (rounds >= turn_rounds) {
			diverge("thread %u waited %d s for its turn; thread %u "
				"never came to %s %#llx", thread_number,
				rounds / 10, e.thread, lock_event_name(e.kind),
				(unsigned long long)e.object);
			unlock();
			return 0;
		}
		unlock();
		if (sleep_until_turn(at) == ETIMEDOUT)
			rounds++;
	}
}

int lock_order_begin(struct lock_turn *t, int kind, const void *object,
		     const void *site)
{
	int e = errno;

	if (!lock_order_on() || called_from_libckpt(site))
		return 0;
	t->kind = kind;
	t->object = object;
	t->site = site;
	t->recorded = 0;
	if (ckpt_lock_order_trap_enter)
		ckpt_debugger_lock_event(CKPT_DEBUGGER_LOCK_ENTER, ckpt_lock_order_events);
	t->replaying = wait_for_turn(t);
	errno = e;
	return 1;
}

/* A call that began live (the record ended there) and returned into a
 * replay: a snapshot was taken while it was in flight (blocked in the
 * real lock) and restored. 0: on its way (live still, or its turn now:
 * t->replaying set); 1: out of turn, the thread gives the lock back and
 * waits for its turn (lock_order_wait_turn). */
int lock_order_overtaken(struct lock_turn *t)
{
	struct lock_entry e;
	int ours;

	if (t->replaying || !lock_order_replaying())
		return 0;
	lock();
	ours = entry_at(ckpt_lock_order_events, &e) &&
	       e.thread == (uint32_t)thread_number;
	unlock();
	if (!ours)
		return 1;
	lock_order_wait_turn(t);
	return 0;
}

void lock_order_wait_turn(struct lock_turn *t)
{
	int e = errno;

	t->replaying = wait_for_turn(t);
	errno = e;
}

static int take_as_called(const struct lock_ops *ops, void *obj, int kind,
			  clockid_t clock, const struct timespec *abstime)
{
	if (kind == LOCK_EV_TRYLOCK)
		return ops->try_take(obj);
	if (kind == LOCK_EV_TIMEDLOCK)
		return ops->take_until(obj, clock, abstime);
	return ops->take(obj);
}

/* A lock of any kind taken in its turn. Replayed, a try or timed lock
 * returns what it returned in the recording (busy, a timeout) without
 * the call, or takes the lock, whose turn has come. */
int lock_order_take(const struct lock_ops *ops, void *obj, int kind,
		    clockid_t clock, const struct timespec *abstime,
		    const void *site)
{
	struct lock_turn t;
	int rc;

	if (!lock_order_begin(&t, kind, obj, site))
		return take_as_called(ops, obj, kind, clock, abstime);
	if (t.replaying && t.recorded != 0)
		rc = t.recorded;
	else
		rc = take_as_called(ops, obj, t.replaying &&
				    kind == LOCK_EV_TIMEDLOCK ? LOCK_EV_MUTEX :
				    kind, clock, abstime);
	/* taken out of turn (a snapshot of the blocked call restored): given
	 * back, unseen by the program, and taken again in turn */
	if (rc == 0 && lock_order_overtaken(&t)) {
		ops->give_back(obj);
		lock_order_wait_turn(&t);
		rc = t.replaying && t.recorded != 0 ? t.recorded :
		     ops->take(obj);
	}
	lock_order_end(&t, rc);
	return rc;
}

int lock_order_replaying(void)
{
	return lock_order_on() && ckpt_lock_order_events < log_count;
}

struct byte_range {
	uintptr_t from, to;
	int inside;
};

/* dl_iterate_phdr's first object is the program itself */
static int in_program_data(struct dl_phdr_info *info, size_t size,
			   void *arg)
{
	struct byte_range *r = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) &&
		    r->from >= start && r->to <= start + ph->p_memsz)
			r->inside = 1;
	}
	return 1;
}

/* Under lock(): may the watched bytes be read directly? Yes when they lie
 * in the program's own data or bss, which stay mapped as long as it runs;
 * anything else (heap, stacks, libraries that may be unloaded) is read
 * with process_vm_readv, a system call per event, which fails on a bad
 * address instead of faulting. */
static int watched_in_program_data(uint64_t addr, int len)
{
	static uint64_t known_addr;
	static int known_len, known_inside;
	struct byte_range r = { (uintptr_t)addr, (uintptr_t)addr + len, 0 };

	if (addr != known_addr || len != known_len) {
		dl_iterate_phdr(in_program_data, &r);
		known_addr = addr;
		known_len = len;
		known_inside = r.inside;
	}
	return known_inside;
}

static int read_watched(unsigned char *now, uint64_t addr, int len)
{
	struct iovec local = { now, (size_t)len };
	struct iovec remote = { (void *)(uintptr_t)addr, (size_t)len };

	if (watched_in_program_data(addr, len)) {
		for (int i = 0; i < len; i++)
			now[i] = ((const volatile unsigned char *)
				  (uintptr_t)addr)[i];
		return 1;
	}
	return syscall(SYS_process_vm_readv, ckpt_real_getpid(), &local, 1,
		       &remote, 1, 0) == len;
}

/* Under lock(): the watched bytes, compared with their copy at each
 * event. */
static void compare_watched(uint32_t event)
{
	unsigned char now[sizeof(ckpt_lock_order_watch_copy)];
	int len = ckpt_lock_order_watch_len;

	if (len <= 0 || len > (int)sizeof(now) ||
	    !read_watched(now, ckpt_lock_order_watch_addr, len))
		return;
	if (memcmp(now, ckpt_lock_order_watch_copy, (size_t)len)) {
		memcpy(ckpt_lock_order_watch_copy, now, (size_t)len);
		ckpt_lock_order_changed_at = event;
	}
}

static void append_entry(const struct lock_turn *t, int result)
{
	struct lock_entry e = {
		.thread = thread_number, .kind = (uint32_t)t->kind,
		.object = (uint64_t)t->object, .site = (uint64_t)t->site,
		.result = result,
	};
	uint32_t at = ckpt_lock_order_events;

	if (pwrite(log_fd, &e, sizeof(e), (off_t)at * sizeof(e)) !=
	    (ssize_t)sizeof(e)) {
		ckpt_log("lock order: write: %s", strerror(errno));
		return;
	}
	if (at - cached_from < cached_count)
		forget_cached();
	log_count = at + 1;
}

/* The event is done (the lock taken, the call returned `result`): the
 * sequence moves on. Returns the event's number. */
uint32_t lock_order_end(struct lock_turn *t, int result)
{
	int e = errno;
	uint32_t at;

	lock();
	at = ckpt_lock_order_events;
	if (t->replaying && result != t->recorded)
		diverge("thread %u %s %p returned %d, %d in the recording",
			thread_number, lock_event_name(t->kind), t->object,
			result, t->recorded);
	else if (!t->replaying && open_log() >= 0)
		append_entry(t, result);
	compare_watched(at);
	/* seq_cst: ordered before wake_next's look at the sleepers */
	__atomic_store_n(&ckpt_lock_order_events, at + 1, __ATOMIC_SEQ_CST);
	if (t->replaying)
		wake_next(at + 1);
	unlock();
	if (ckpt_lock_order_trap_at == (int64_t)at)
		ckpt_debugger_lock_event(CKPT_DEBUGGER_LOCK_EVENT, at);
	errno = e;
	return at;
}

void lock_order_name_thread(uint32_t number)
{
	thread_number = number;
}

const char *lock_event_name(int kind)
{
	switch (kind) {
	case LOCK_EV_MUTEX:
		return "locks";
	case LOCK_EV_TRYLOCK:
		return "trylocks";
	case LOCK_EV_TIMEDLOCK:
		return "timedlocks";
	case LOCK_EV_COND:
		return "returns from a wait on";
	case LOCK_EV_CREATE:
		return "creates a thread at";
	case LOCK_EV_BARRIER:
		return "returns from a barrier at";
	}
	return "?";
}

/* Restarted (restore.c, before any thread of the program runs): the
 * descriptor of the record is not restored (its number may be another's
 * now); the next call opens the file again and learns its size. */
void lock_order_restarted(void)
{
	log_fd = -1;
	forget_cached();
}

/* A child of fork: a sequence and a record of its own; the thread that
 * forked is its first thread. */
void lock_order_forked(void)
{
	log_fd = -1;
	forget_cached();
	ckpt_lock_order_events = 0;
	thread_number = 0;
	sleepers = 0;
}
