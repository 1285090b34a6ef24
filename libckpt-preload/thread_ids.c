/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Thread ids that glibc keeps in user memory. A restored thread has a new
 * kernel tid, written into its descriptor (threads.c), but the locks it
 * held at the checkpoint still name the old one: a recursive mutex would
 * wait on its own owner, an error-checking one refuse its unlock, the
 * kernel look up the owner of a PI or robust futex by a tid that is gone,
 * and pthread_rwlock_unlock take a writer for a reader.
 *
 * So every thread keeps, in a small __thread table, the owner-checked
 * locks it holds (wrappers/locks.c); at a restart, before any thread runs
 * program code, the leader rewrites each one that still names its
 * thread's old tid, plus the robust mutexes on each thread's kernel
 * robust list, ld.so's own recursive locks (dlopen, dl_iterate_phdr,
 * TLS setup) and the rwlocks libc write-holds inside itself (setlocale's,
 * gettext's). Every decision is taken on the checkpoint's values before
 * anything is written: a new tid may equal another thread's old one.
 * docs/resources.md ("Threads") has the story and the limits.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <linux/futex.h>
#include <locale.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include "internal.h"

#define ROBUST_LIST_LIMIT	2048	/* the kernel's own bound */
#define MAX_TID_FIXES		4096

struct owned_locks {
	pid_t tid;		/* this thread's kernel tid; 0: ask */
	int count;
	int untracked;		/* held beyond the table: not rewritten */
	struct {
		void *obj;
		int is_rwlock;
	} lock[CKPT_OWNED_LOCKS];
};

static __thread struct owned_locks owned
	__attribute__((tls_model("initial-exec")));

pid_t thread_ids_self(void)
{
	if (!owned.tid)
		owned.tid = ckpt_real_gettid();
	return owned.tid;
}

/* The child of fork has another tid than the thread that forked. */
void thread_ids_after_fork(void)
{
	owned.tid = 0;
}

static int find_owned(const void *obj)
{
	for (int i = 0; i < owned.count; i++)
		if (owned.lock[i].obj == obj)
			return i;
	return -1;
}

/* Note obj as held (or about to be). Returns 1 when it was not noted yet,
 * so a failed lock can take it back with thread_ids_untrack. */
int thread_ids_track(void *obj, int is_rwlock)
{
	if (find_owned(obj) >= 0)
		return 0;
	if (owned.count == CKPT_OWNED_LOCKS) {
		owned.untracked++;
		return 0;
	}
	owned.lock[owned.count].obj = obj;
	owned.lock[owned.count].is_rwlock = is_rwlock;
	/* the entry before the count: a checkpoint signal sees either
	 * nothing or the whole entry */
	__atomic_store_n(&owned.count, owned.count + 1, __ATOMIC_RELEASE);
	return 1;
}

void thread_ids_untrack(void *obj)
{
	int i = find_owned(obj);

	if (i < 0) {
		if (owned.untracked > 0)
			owned.untracked--;
		return;
	}
	owned.lock[i] = owned.lock[owned.count - 1];
	__atomic_store_n(&owned.count, owned.count - 1, __ATOMIC_RELEASE);
}

/* At the checkpoint, on the thread itself. */
void thread_ids_capture(struct ckpt_thread *t)
{
	t->saved_tid = ckpt_real_gettid();
	t->owned_locks = &owned;
	if (owned.untracked)
		ckpt_log("thread %d holds more than %d recursive, "
			 "error-checking, robust or PI locks; %d of them "
			 "will name a stale thread id after a restart",
			 t->vtid, CKPT_OWNED_LOCKS, owned.untracked);
}

/*
 * The restart side. Phase one reads the checkpoint's values and lists
 * the fields to change; phase two changes them.
 */
struct tid_fix {
	int *field;
	pid_t old_tid, new_tid;
	int tid_bits_only;	/* a futex word: keep the flag bits */
};

static struct tid_fix fixes[MAX_TID_FIXES];
static int nfixes, fixes_dropped;
static void *rtld_global;
static size_t rtld_global_size;

/* libc's writable data (its .data and .bss past the RELRO part), where
 * its internal rwlocks live */
#define LIBC_DATA_SEGMENTS	4
static struct {
	uintptr_t start, end;
} libc_data[LIBC_DATA_SEGMENTS];
static int nlibc_data;

/* Read memory that may be gone (a stale entry, a robust list through
 * freed memory) without faulting. */
static int read_own_memory(const void *addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)addr, len };

	return syscall(SYS_process_vm_readv, ckpt_real_getpid(), &local, 1,
		       &remote, 1, 0) == (long)len ? 0 : -EFAULT;
}

static void add_fix(int *field, int value, pid_t old_tid, pid_t new_tid,
		    int tid_bits_only)
{
	pid_t tid = tid_bits_only ? (pid_t)(value & FUTEX_TID_MASK) : value;

	if (tid != old_tid || old_tid == new_tid)
		return;
	if (nfixes == MAX_TID_FIXES) {
		fixes_dropped++;
		return;
	}
	fixes[nfixes++] = (struct tid_fix){ field, old_tid, new_tid,
					    tid_bits_only };
}

static void note_mutex(pthread_mutex_t *addr, pid_t old_tid, pid_t new_tid)
{
	pthread_mutex_t m;

	if (read_own_memory(addr, &m, sizeof(m)) < 0)
		return;
	add_fix(&addr->__data.__owner, m.__data.__owner, old_tid, new_tid, 0);
	if (m.__data.__kind & (CKPT_MUTEX_ROBUST | CKPT_MUTEX_PRIO_INHERIT))
		add_fix(&addr->__data.__lock, m.__data.__lock, old_tid,
			new_tid, 1);
}

static void note_rwlock(pthread_rwlock_t *addr, pid_t old_tid,
			pid_t new_tid)
{
	pthread_rwlock_t rw;

	if (read_own_memory(addr, &rw, sizeof(rw)) < 0)
		return;
	add_fix(&addr->__data.__cur_writer, rw.__data.__cur_writer, old_tid,
		new_tid, 0);
}

static void note_owned_table(struct owned_locks *table, pid_t old_tid,
			     pid_t new_tid)
{
	int n = table->count;

	for (int i = 0; i < n && i < CKPT_OWNED_LOCKS; i++) {
		if (table->lock[i].is_rwlock)
			note_rwlock(table->lock[i].obj, old_tid, new_tid);
		else
			note_mutex(table->lock[i].obj, old_tid, new_tid);
	}
}

/* A robust list entry is the mutex's __list.__next; the futex word (the
 * mutex's __lock) sits futex_offset from it. Bit 0 marks a PI mutex. */
static void note_robust_entry(uintptr_t entry, long futex_offset,
			      pid_t old_tid, pid_t new_tid)
{
	entry &= ~(uintptr_t)1;
	if (entry)
		note_mutex((pthread_mutex_t *)(entry + futex_offset),
			   old_tid, new_tid);
}

static void note_robust_list(const struct ckpt_thread *t, pid_t new_tid)
{
	struct robust_list_head head;
	uintptr_t entry, headp = (uintptr_t)t->robust_head;

	if (!t->robust_head ||
	    read_own_memory(t->robust_head, &head, sizeof(head)) < 0)
		return;
	entry = (uintptr_t)head.list.next;
	for (int n = 0; entry != headp && n < ROBUST_LIST_LIMIT; n++) {
		struct robust_list next;

		if (read_own_memory((void *)(entry & ~(uintptr_t)1), &next,
				    sizeof(next)) < 0)
			break;
		note_robust_entry(entry, head.futex_offset, t->saved_tid,
				  new_tid);
		entry = (uintptr_t)next.next;
	}
	note_robust_entry((uintptr_t)head.list_op_pending, head.futex_offset,
			  t->saved_tid, new_tid);
}

/* ld.so's recursive locks (_dl_load_lock, _dl_load_write_lock, the TLS
 * and unique-symbol locks) live in _rtld_global and are taken through
 * pointers ld.so looked up in libc, never through our wrappers: find the
 * held ones by their shape (a recursive mutex, count > 0, owned by a
 * thread of ours). */
static void note_loader_locks(const struct ckpt_thread *t, pid_t new_tid)
{
	size_t step = __alignof__(pthread_mutex_t);

	if (!rtld_global)
		return;
	for (size_t off = 0; off + sizeof(pthread_mutex_t) <=
	     rtld_global_size; off += step) {
		pthread_mutex_t *m = (pthread_mutex_t *)((char *)rtld_global +
							 off);

		/* held: count and users at least 1, the lock word set; a
		 * plain recursive mutex is on no robust list */
		if (m->__data.__kind == PTHREAD_MUTEX_RECURSIVE_NP &&
		    m->__data.__count > 0 && m->__data.__lock != 0 &&
		    m->__data.__nusers > 0 && !m->__data.__list.__prev &&
		    !m->__data.__list.__next)
			add_fix(&m->__data.__owner, m->__data.__owner,
				t->saved_tid, new_tid, 0);
	}
}

/* libc's rwlocks (__libc_setlocale_lock, gettext's _nl_state_lock) are
 * taken inside libc, never through our wrappers. pthread_rwlock_unlock
 * tells a writer from a reader by __cur_writer == its tid: a restored
 * thread unlocking one it write-held would "unlock a read" and leave it
 * write-held for ever. Found by their shape: write-locked (__readers has
 * PTHREAD_RWLOCK_WRLOCKED), __cur_writer this thread's old tid. */
#define RWLOCK_WRLOCKED	2	/* glibc's PTHREAD_RWLOCK_WRLOCKED */

static int looks_write_locked_by(const pthread_rwlock_t *rw, pid_t tid)
{
	const struct __pthread_rwlock_arch_t *d = &rw->__data;

	if (!(d->__readers & RWLOCK_WRLOCKED) || d->__cur_writer != tid)
		return 0;
	/* an initialized lock keeps its padding zero and its flags small:
	 * ints that only happen to match (a dynamic-section entry of value
	 * 2112 beside a tag of 7 matched here once) do not */
	if (d->__pad3 || d->__pad4 || (unsigned)d->__shared > 1 ||
	    d->__flags > 2)
		return 0;
#ifdef __x86_64__
	if (d->__rwelision || d->__pad2)
		return 0;
	for (size_t i = 0; i < sizeof(d->__pad1); i++)
		if (d->__pad1[i])
			return 0;
	return 1;
#else
	return !d->__pad1 && !d->__pad2;
#endif
}

static void note_libc_rwlocks(const struct ckpt_thread *t, pid_t new_tid)
{
	size_t step = __alignof__(pthread_rwlock_t);

	for (int i = 0; i < nlibc_data; i++)
		for (uintptr_t a = libc_data[i].start;
		     a + sizeof(pthread_rwlock_t) <= libc_data[i].end;
		     a += step) {
			pthread_rwlock_t *rw = (pthread_rwlock_t *)a;

			if (looks_write_locked_by(rw, t->saved_tid))
				add_fix(&rw->__data.__cur_writer,
					rw->__data.__cur_writer, t->saved_tid,
					new_tid, 0);
		}
}

static void apply_fix(const struct tid_fix *f)
{
	int v = __atomic_load_n(f->field, __ATOMIC_RELAXED);

	/* another process may set FUTEX_WAITERS on a shared mutex now */
	for (;;) {
		int tid = f->tid_bits_only ? (int)(v & FUTEX_TID_MASK) : v;
		int nv = f->tid_bits_only ?
			 (int)((v & ~FUTEX_TID_MASK) | f->new_tid) : f->new_tid;

		if (tid != f->old_tid ||
		    __atomic_compare_exchange_n(f->field, &v, nv, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return;
	}
}

/* Called on the leader, once every restored thread has its new tid
 * (new_tids[i] for threads[i]) and before any of them runs program
 * code. */
void thread_ids_restore(struct ckpt_thread *const *threads, int n,
			const pid_t *new_tids)
{
	nfixes = 0;
	fixes_dropped = 0;
	for (int i = 0; i < n; i++) {
		const struct ckpt_thread *t = threads[i];
		struct owned_locks *table = t->owned_locks;

		if (!t->saved_tid)
			continue;
		if (table)
			note_owned_table(table, t->saved_tid, new_tids[i]);
		note_robust_list(t, new_tids[i]);
		note_loader_locks(t, new_tids[i]);
		note_libc_rwlocks(t, new_tids[i]);
	}
	for (int i = 0; i < nfixes; i++)
		apply_fix(&fixes[i]);
	for (int i = 0; i < n; i++)
		if (threads[i]->owned_locks)
			threads[i]->owned_locks->tid = new_tids[i];
	if (fixes_dropped)
		ckpt_log("%d locks still name a thread id of the checkpointed "
			 "process (more than %d to rewrite)", fixes_dropped,
			 MAX_TID_FIXES);
}

/* Found while the program starts: looking it up at a restart would take
 * the very loader lock that may need rewriting. */
CKPT_EARLY_CONSTRUCTOR static void find_loader_locks(void)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;
	void *g = dlsym(RTLD_DEFAULT, "_rtld_global");

	if (!g || !dladdr1(g, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return;
	rtld_global = g;
	rtld_global_size = sym->st_size;
}

/* The end of the object's RELRO part (0: none): the start of its writable
 * segment that ld.so made read-only after relocating it (the dynamic
 * section, the GOT). No lock lives there, and a write would fault. */
static uintptr_t relro_end(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_RELRO)
			return info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	return 0;
}

/* A callback of dl_iterate_phdr: the writable PT_LOAD segments of libc
 * (the object that defines setlocale), less their RELRO part. */
static int find_libc_segments(struct dl_phdr_info *info, size_t size,
			      void *libc_base)
{
	uintptr_t relro;

	(void)size;
	if (info->dlpi_addr != (ElfW(Addr))libc_base)
		return 0;
	relro = relro_end(info);
	for (int i = 0; i < info->dlpi_phnum &&
	     nlibc_data < LIBC_DATA_SEGMENTS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		uintptr_t end = start + ph->p_memsz;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		if (relro > start && relro <= end)
			start = relro;
		if (start >= end)
			continue;
		libc_data[nlibc_data].start = start;
		libc_data[nlibc_data].end = end;
		nlibc_data++;
	}
	return 1;
}

/* Found while the program starts, like the loader's locks. */
CKPT_EARLY_CONSTRUCTOR static void find_libc_locks(void)
{
	struct link_map *map = NULL;
	Dl_info info;

	if (!dladdr1((void *)setlocale, &info, (void **)&map,
		     RTLD_DL_LINKMAP) || !map)
		return;
	dl_iterate_phdr(find_libc_segments, (void *)map->l_addr);
}
