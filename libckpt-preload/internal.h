/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libckpt internals shared by the files of libckpt-preload/, wrappers/ and
 * vpid/. Rule for everything reachable while application threads are
 * suspended or while a restart is in progress: no malloc, no stdio, no
 * locks (a suspended thread may hold any of them). Raw syscalls,
 * stack buffers and the mmap'd tables below only.
 */
#ifndef CKPT_INTERNAL_H
#define CKPT_INTERNAL_H

#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include "arch.h"
#include "ckpt/image.h"
#include "ckpt/restart_args.h"
#include <unistd.h>

/* libckpt exports a syscall() wrapper (virtual ids); its own code must
 * reach the kernel directly. */
long ckpt_syscall(long nr, ...);
long ckpt_syscall_error(long err);
/* The kernel's result as it is (-errno), errno untouched: for threads
 * that share the manager's TLS (extent_encode.c). */
long ckpt_syscall_noerrno(long nr, long a1, long a2, long a3, long a4,
			  long a5, long a6);
#define syscall ckpt_syscall

#define CKPT_MAX_THREADS	4096
/* Constructors that look symbols up (dlsym takes ld.so's load lock) run
 * before ckpt_init, the one plain constructor, starts the manager thread:
 * a checkpoint could otherwise stop the main thread inside such a dlsym,
 * holding the lock, while the manager needs it for a wrapper not yet
 * resolved (a just-started process then never answers DO_SUSPEND). */
#define CKPT_EARLY_CONSTRUCTOR	__attribute__((constructor(101)))
#define CKPT_MAX_FDS		4096
/* files on temporary storage: content saved up to this size by default
 * (saved_files.c; CKPT_TMP_FILE_MAX, ckpt_launch --tmp-file-max) */
#define CKPT_TMP_FILE_SAVE_MAX	(64ULL << 20)
#define CKPT_SUSPEND_TIMEOUT_MS	10000
#define CKPT_COMMIT_WAIT_MS	300000	/* synced image: DO_COMMIT or
					   DO_ABORT within the round's time */
#define CKPT_SUSPENDED_IDLE_MS	120000	/* resume if the coordinator
					   vanishes while we are stopped
					   (one that does not say its phase
					   bounds in WELCOME) */
#define CKPT_JOIN_WAIT_MS	3000	/* the coordinator waits this long
					   for a forked member */
#define CKPT_ORDER_SLACK_MS	2000	/* beyond the coordinator's bound */
#define CKPT_REJOIN_FIRST_MS	100	/* first pause before rejoining */
#define CKPT_REJOIN_MAX_MS	5000	/* longest pause between tries */

/* The namespaces a process compares with the computation's (process.c):
 * user, mnt, net, ipc, uts. */
#define CKPT_NS_KINDS 5

struct ckpt_state {
	int coord_fd;			/* -1 when not connected */
	int signal;			/* the checkpoint signal (ckpt_signal.c) */
	pid_t vpid, vppid;
	uint64_t generation;		/* last generation written */
	uint64_t computation_id;	/* the coordinator's, from WELCOME */
	uint32_t coord_flags;		/* CKPT_WELCOME_F_* */
	uint32_t coord_phase_ms;	/* the coordinator's phase bounds, */
	uint32_t coord_write_ms;	/* from WELCOME; 0: not said */
	uint32_t restarts;		/* times this process was restarted */
	int compress;			/* CKPT_COMPRESS (ckpt_launch
					   --compress): every image */
	int incremental;		/* CKPT_INCREMENTAL (ckpt_launch
					   --incremental): chains of images */
	uint64_t base_ns[CKPT_NS_KINDS];/* the inodes of the namespaces
					   the computation runs in (CKPT_NS,
					   or this process's at its start
					   or restart; process.c) */
	int launched;			/* the process ckpt_launch became
					   (CKPT_LAUNCHED), kept across its
					   execs, not its forks */
	int forked;			/* CKPT_FORKED (ckpt_launch
					   --forked): every checkpoint is a
					   forked one (forked_copy.c) */
	char coord_addr[512];
	char ckpt_dir[4096];
	char program[64];
	char unique_id[64];
	char hostname[64];
	char image_path[4096];		/* last durable image */
	uint32_t round_members;		/* the writing round's processes on
					   this host (DO_WRITE); 0: not said */
};
extern struct ckpt_state ckpt;

/* debugger.c: the events of ckpt_debugger_event (a debugger's
 * breakpoint); the numbers are the extension's interface. */
enum ckpt_debugger_event_kind {
	CKPT_DEBUGGER_SIGNAL = 1,	/* arg: the checkpoint signal now */
	CKPT_DEBUGGER_THREADS_SIGNALED = 2, /* arg: threads signaled */
	CKPT_DEBUGGER_RELEASING = 3,	/* parked threads about to go */
	CKPT_DEBUGGER_RESTORED = 4,	/* arg: real pid; about to SIGSTOP */
	CKPT_DEBUGGER_ROUND_DONE = 5,	/* the manager's part of a round
					   ended (image durable, or failed) */
	CKPT_DEBUGGER_LOCK_EVENT = 6,	/* arg: the lock event just done
					   (ckpt_lock_order_trap_at) */
	CKPT_DEBUGGER_LOCK_ENTER = 7,	/* arg: the next event; a thread
					   comes to one (..._trap_enter) */
};
void debugger_note(int event, long arg);
void ckpt_debugger_lock_event(int event, long arg);
void debugger_stop_if_asked(uint32_t restart_flags);

/* wrappers/record_inputs.c: set in libckpt's own threads, never recorded */
extern __thread int ckpt_internal_thread
	__attribute__((tls_model("initial-exec")));
int record_inputs_wants_read(int fd);
const char *record_inputs_path(void);	/* NULL when not recording */
/* both records are opened again after a restart (restore.c) */
void record_inputs_restarted(void);
void lock_order_restarted(void);
/* and a child of fork starts records of its own (manager.c) */
void record_inputs_forked(void);
void lock_order_forked(void);
ssize_t record_inputs_read(int fd, void *buf, size_t len,
			   ssize_t (*next_read)(int, void *, size_t));

#define CKPT_MAX_PENDING 8
struct pending_signals {
	int count;
	siginfo_t info[CKPT_MAX_PENDING];
};

/* Per-thread record captured in the suspend handler. */
struct ckpt_thread {
	pid_t vtid;
	pid_t real_tid;			/* rewritten at restart */
	int is_main;
	int is_manager;
	uint64_t tls;
	pid_t *clear_tid;		/* set_tid_address / &pd->tid */
	void *robust_head;
	size_t robust_len;
	void *rseq;
	uint32_t rseq_len;
	int rseq_registered;
	uintptr_t pc, sp;		/* where the thread was interrupted */
	void *uc;			/* its signal frame (NULL: manager) */
	uint64_t program_mask;		/* the mask the frame restores, as the
					   program sees it (the checkpoint
					   signal as it wished): for the
					   image's signal state */
	uint64_t features_in_use;	/* xsave components live in the frame */
	char name[16];			/* PR_GET_NAME (/proc/PID/task/TID/comm) */
	int pdeathsig;			/* PR_GET_PDEATHSIG: the signal the
					   thread gets when its parent dies
					   (per thread; a fork clears it) */
	cpu_set_t affinity;		/* sched_getaffinity of the thread
					   (HPC programs pin threads) */
	int affinity_saved;
	int nice;			/* getprio of the thread (Linux: per
					   thread) */
	int policy;			/* sched_getscheduler, -1: unknown */
	struct sched_param sched_param;
	int pid_arg;			/* the pending system call's argument
					   that names a process, or -1 */
	pid_t pid_arg_virt;		/* that process's virtual pid */
	struct ckpt_context ctx;
	struct pending_signals pending;
	pid_t saved_tid;		/* kernel tid at the checkpoint */
	struct owned_locks *owned_locks; /* its table (thread_ids.c) */
	uintptr_t park_sp;		/* its handler's frame while parked */
};

/* One kind of process resource: the checkpoint sequence calls save while
 * the threads are stopped, write to add records to the image, and restore
 * in the restarted process before the threads resume. */
struct image_writer;
struct ckpt_resource_ops {
	const char *name;
	int (*save)(void);
	/* at DO_WRITE, once every process of the computation is stopped,
	 * before memory is captured: state that depends on the others */
	int (*drain)(void);
	int (*write)(struct image_writer *w);
	int (*restore)(const struct ckpt_restart_args *args);
};
extern const struct ckpt_resource_ops process_resource_ops;
extern const struct ckpt_resource_ops signal_resource_ops;
extern const struct ckpt_resource_ops file_resource_ops;
extern const struct ckpt_resource_ops zombie_resource_ops;
int process_has_children(void);
int process_list_children(pid_t *out, int max);
extern const struct ckpt_resource_ops session_resource_ops;
extern const struct ckpt_resource_ops process_group_resource_ops;
extern const struct ckpt_resource_ops saved_files_resource_ops;
extern const struct ckpt_resource_ops posix_timer_resource_ops;
extern const struct ckpt_resource_ops sysv_ipc_resource_ops;
extern const struct ckpt_resource_ops file_lock_resource_ops;
extern const struct ckpt_resource_ops peer_creds_resource_ops;
extern const struct ckpt_resource_ops image_chain_resource_ops;
extern const struct ckpt_resource_ops *const ckpt_resources[];

/* accept_queue.c: connections waiting in a TCP listener's accept queue */
void accept_queue_round_begin(void);
void accept_queue_note_shared(void);
int accept_queue_save(int listener, int (*note)(int conn, int listener));
void accept_queue_post(void);
int accept_queue_peeks(void);
int accept_queue_swap(int fd, struct sockaddr *addr, socklen_t *len,
		      socklen_t room, int flags);
void accept_queue_after_fork_in_child(void);
void accept_queue_forget(void);

/* sysv_ipc.c: SysV message queues and semaphore sets, named only */
#define SYSV_IPC_MSG	1
#define SYSV_IPC_SEM	2
void sysv_ipc_note(int kind, int id, key_t key);

/* files.c */
int fd_is_mqueue(int fd);

/* saved_files.c: regular files whose identity (and for some, content)
 * goes into the image */
struct stat;
void saved_files_read_settings(void);
int saved_files_note_fd(int fd, const char *path, const struct stat *st,
			int fl_flags);
/* For exec (wrappers/exec.c): put the CKPT_SAVE_FILES and
 * CKPT_TMP_FILE_MAX settings that are in use into out (room for 2);
 * returns how many. */
int saved_files_env(const char **out);
int saved_files_on_temporary_storage(const char *path);

/* created_files.c: files made with O_CREAT|O_EXCL or mkstemp on
 * temporary storage, saved by saved_files.c while they are there */
void created_files_note(int fd);
void created_files_each(void (*fn)(const char *path, const struct stat *st));
void created_files_after_restart(void);
/* file_locks.c: the process's locks on its files, taken again at a
 * restart */
void file_locks_note(void);
int files_fd_of_inode(uint64_t dev, uint64_t ino, int *from,
		      const char **path, int *flags);
/* created_journal.c: the on-disk record of those files, for a restart */
void created_journal_note(int file_fd, const char *path,
			  const struct stat *st);
void created_journal_after_restart(void);
void created_journal_inherit(const char *epoch_var);
void created_journal_epoch(uint64_t generation);
size_t created_journal_env(char *buf, size_t len);
extern const size_t ckpt_nresources;

/* manager.c: an exec or exit waits (bounded) until the image being
 * made durable is done */
void manager_wait_image_settled(void);

/* session.c */
pid_t session_virt_from_real(pid_t real);
uint64_t session_image_flags(void);
void session_restore_foreground(pid_t vpgid);

/* unrestored.c: what a restart will not restore, said at checkpoint */
void unrestored_begin(void);
void unrestored_add(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
void unrestored_fd(int fd, const char *path);
const char *unrestored_text(void);

/* socket_names.c */
int sockets_describe(int fd, char *out, size_t len);
long sockets_diag_ask(const void *req, size_t len, void *reply,
		      size_t replylen);

/* event_fds.c: eventfd, timerfd, signalfd, epoll (for files.c) */
int event_fds_kind(const char *link);
const char *event_fds_name(int kind);
void event_fds_begin(void);
int event_fds_save(int fd, int kind);
void event_fds_check_interest(pid_t pid, int (*saved_kind)(int fd));
int event_fds_refresh(int fd, pid_t pid, int (*saved_kind)(int fd));
void event_fds_describe(int fd, int64_t *offset, uint32_t *info);
int event_fds_restore(int fd);
int event_fds_apply(int fd, int target);
void event_fds_restore_interest(int epfd);

/* inotify.c (an event fd kind of event_fds.c) and wrappers/inotify.c */
void inotify_begin(void);
int inotify_save(int fd);
uint32_t inotify_watch_count(int fd);
int inotify_restore(int fd);
int inotify_watch_path(int fd, int wd, const char **path, uint32_t *flags);

/* pidfds.c (an event fd kind of event_fds.c) */
void pidfds_begin(void);
int pidfds_save(int fd);
void pidfds_describe(int fd, int64_t *vpid, uint32_t *ended);
int pidfds_restore(int fd);

/* posix_timers.c: timer_create timers, made again once the threads
 * exist (restore.c) */
void posix_timers_restore(void);
int timer_set_absolute(int kid);		/* wrappers/timer.c */

/* files.c */
int files_private_fd(int fd);
int files_saved_inet_socket(int fd);
int files_restored_a_terminal(void);
void files_rewind_offsets(void);
void files_renew_event_fds(void);

/* log.c */
extern int ckpt_log_fd;
void ckpt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ckpt_fmt(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
pid_t ckpt_real_getpid(void);
pid_t ckpt_real_gettid(void);
int ckpt_is_own_fd(int fd);
void ckpt_mark_own_fd(int fd, int own);
int ckpt_next_own_fd(int from);
int ckpt_move_fd_high(int fd);
void ckpt_forget_own_fds(void);

/* manager_fds.c: descriptors the manager opens while the program runs */
void manager_fds_init(void);
void manager_fds_after_fork_in_child(void);
void manager_fds_hold(void);
void manager_fds_release(void);
int manager_fd_keep(int fd);
int manager_fd_close(int fd);

/* fd_headroom.c: the soft RLIMIT_NOFILE raised for a round */
void fd_headroom_take(void);
void fd_headroom_give_back(void);
void fd_headroom_explain(int r, char *err, size_t errlen);
struct rlimit;
void fd_headroom_program_limit(struct rlimit *r);
int ckpt_open_raw(const char *path, int flags);
int ckpt_read_small_file(const char *path, char *buf, size_t len);

/* The entries of a directory (or only the numeric ones of a /proc
 * directory: fds, tids), read with getdents64 into the iterator itself:
 * no malloc, usable while threads are stopped. */
struct ckpt_dir_iter {
	int fd;
	long pos, len;
	char buf[4096];
};
int ckpt_dir_open(struct ckpt_dir_iter *it, const char *path);
int ckpt_dir_next_number(struct ckpt_dir_iter *it);	/* -1 at the end */
struct dirent64;
const struct dirent64 *ckpt_dir_next_entry(struct ckpt_dir_iter *it);
							/* NULL at the end */
void ckpt_dir_close(struct ckpt_dir_iter *it);

/* threads.c */
int threads_install_handler(void);
void threads_checkpoint_action(struct sigaction *sa);
void threads_mask_ckpt_signal(int how, sigset_t *old);
void threads_lock_signal(uint64_t *old);
void threads_unlock_signal(void);
void threads_block_all(uint64_t *old);
unsigned threads_critical_begin(void);
int threads_critical_end(unsigned moves_at_begin);
int threads_critical_enter_handler(void);
void threads_critical_leave_handler(int depth);
void threads_set_mask(uint64_t mask);
void threads_reset_after_fork(void);

/* emulator_threads.c: an emulator's own threads (qemu-user) */
void emulator_threads_init(void);
void emulator_threads_refresh(void);
int emulator_thread(int tid);
uint64_t emulator_guest_base(void);
int emulator_active(void);
void emulator_note_fork_child(void);
void emulator_manager_number_begin(void);
void emulator_manager_number_end(void);
/* signals.c: under an emulator, handlers return through libckpt */
void signals_return_through_libckpt(int sig);
void signals_all_return_through_libckpt(void);
int threads_park_for_move(char *err, size_t errlen);
void threads_release_from_move(int from, int to);
int threads_suspend_all(char *err, size_t errlen);
void threads_resume_all(void);
int threads_count(void);
const struct ckpt_thread *threads_get(int i);
void threads_capture_self(struct ckpt_thread *t);
/* tid_address.c: a thread's clear-child-tid word (&pd->tid) */
void tid_address_init(void);
pid_t *tid_address_of_self(void);
struct ckpt_thread *threads_manager_slot(void);
int threads_restore_all(char *err, size_t errlen);
void threads_release_restored(void) __attribute__((noreturn));
void threads_manager_restored(void);
void threads_restart_hello_sent(void);
uint64_t threads_main_tls(void);
uint64_t threads_features_in_use(void);
void threads_set_current_features(uint64_t features);

/* thread_ids.c: locks that name their owner's tid, rewritten at restart */
#define CKPT_OWNED_LOCKS	32	/* per thread */
struct owned_locks;
/* glibc's mutex kinds (nptl/pthreadP.h), part of its ABI: the static
 * initialisers store them in __kind. */
#define CKPT_MUTEX_KIND_MASK		3
#define CKPT_MUTEX_RECURSIVE		1
#define CKPT_MUTEX_ERRORCHECK		2
#define CKPT_MUTEX_ROBUST		16
#define CKPT_MUTEX_PRIO_INHERIT		32
#define CKPT_MUTEX_PRIO_PROTECT		64
/* the kinds whose lock or unlock compares __owner with the caller's tid */
static inline int thread_ids_kind_is_owner_checked(int kind)
{
	int type = kind & CKPT_MUTEX_KIND_MASK;

	return type == CKPT_MUTEX_RECURSIVE || type == CKPT_MUTEX_ERRORCHECK ||
	       (kind & (CKPT_MUTEX_ROBUST | CKPT_MUTEX_PRIO_INHERIT |
			CKPT_MUTEX_PRIO_PROTECT));
}
int thread_ids_track(void *obj, int is_rwlock);
void thread_ids_untrack(void *obj);
pid_t thread_ids_self(void);
void thread_ids_after_fork(void);
void thread_ids_capture(struct ckpt_thread *t);
void thread_ids_restore(struct ckpt_thread *const *threads, int n,
			const pid_t *new_tids);
/* Per thread, what interrupted its system calls, three counts in one
 * word so that one look before a call tells what came during it (the
 * difference of two looks, wrappers.h): the checkpoint signal (bits
 * 0-31), handlers of the program installed with SA_RESTART (32-47), and
 * without it (48-63). */
#define CKPT_INTR_CHECKPOINT		1ULL
#define CKPT_INTR_HANDLER_RESTART	(1ULL << 32)
#define CKPT_INTR_HANDLER_NORESTART	(1ULL << 48)
extern __thread uint64_t ckpt_interrupts;

/* ckpt_signal.c: the choice of the checkpoint signal and its moves */
void ckpt_signal_choose(void);
int ckpt_signal_pinned(void);
void ckpt_signal_env(char *buf, size_t len);
int ckpt_signal_take(int sig, const struct sigaction *handler);
void ckpt_signal_record_action(const struct sigaction *act,
			       struct sigaction *old);
const struct sigaction *ckpt_signal_program_action(int sig);
int ckpt_signal_handler_masks(int sig);
void ckpt_signal_set_handler_masks(int sig, int masks);
void ckpt_signal_move_handler_masks(int from, int to);
uint64_t ckpt_signal_program_mask(uint64_t kernel);
uint64_t ckpt_signal_kernel_mask(uint64_t program);
void ckpt_signal_swap_mask(uint64_t *mask, int from, int to);
void ckpt_signal_swap_frame_mask(void *ucontext, int from, int to);
void ckpt_signal_block_in_this_thread(void);
unsigned ckpt_signal_moves(void);
uint64_t ckpt_signal_bit(void);
uint64_t ckpt_signal_frame_program_mask(const void *ucontext);
void ckpt_signal_set_frame_mask(void *ucontext, uint64_t program);
void ckpt_signal_restore_wish(uint64_t program);
int ckpt_signal_blocked_here(void);
void ckpt_signal_inherit_blocked(int sig);
int ckpt_signal_move(int (*install)(void *arg), void *arg,
		     uint64_t *own_mask, char *err, size_t errlen);

/* wrappers/signal.c: a kernel action (handler, flags) as the program
 * set it: its handler, not the trampoline that calls it */
void signal_program_view(int sig, uint64_t *handler, uint64_t *flags);

/* pending_signals.c */
void pending_capture_thread(struct pending_signals *ps);
void pending_capture_process(void);
void pending_requeue_thread(const struct pending_signals *ps);
void pending_requeue_process(void);
/* What was captured, as masks for the image (bit n-1: signal n). */
uint64_t pending_signals_mask(const struct pending_signals *ps);
uint64_t pending_process_mask(void);

/* memory.c */
struct image_writer;
int memory_scan(struct image_writer *w, char *err, size_t errlen);
void memory_round_begins(void);
void memory_reprotect(void);
/* A page of the region not stored restores as zeros (fresh memory): its
 * pages of zeros are left out of the image. */
int memory_restores_as_zeros(int kind, uint32_t prot);
/* The page at p is all zeros (reads one cache line of a page of data). */
int memory_page_is_zero(const void *p);
/* The restart loader kept the kernel's argument area mapped
 * (CKPT_RESTART_F_ARGS_KEPT): later checkpoints leave it out. */
void memory_note_args_area_kept(void);

/* memory.c: one line of /proc/self/maps */
struct maps_vma {
	uint64_t start, end, offset, ino;
	unsigned major, minor;
	uint32_t prot;
	int shared;
	const char *name;	/* into the line; "" when anonymous */
};
int maps_vma_parse(const char *line, struct maps_vma *v);

/* restart_image.c: memory mapped from the image of the last restart */
void restart_image_note_mapped(uint64_t mapped_at, int image_fd);
/* Is v a mapping of that image (the program's anonymous memory)? */
int restart_image_backs(const struct maps_vma *v);
/* 0: [addr, addr + len) holds no such memory (a quick test). */
int restart_image_may_back(const void *addr, size_t len);
void restart_image_moved_to(const void *addr, size_t len);
int restart_image_make_anonymous(void *addr, size_t len, int keep);

/* memory.c: the shared memory objects the process maps */
struct shared_region {
	uint64_t start, end, offset, ino;
	uint64_t dev;		/* of the object, as st_dev */
	uint32_t prot;
	int sysv;		/* a SysV segment (shmat) */
};
int memory_shared_regions(struct shared_region *out, int max);
int memory_shared_file_maps(int (*note)(const char *path,
					const struct stat *st, uint32_t prot));
extern const struct ckpt_resource_ops shared_memory_resource_ops;
struct ckpt_plan_shm;
int handover_read_shm(int plan_fd, struct ckpt_plan_shm *out, int max);
int shared_memory_detach_restored(const void *addr);
void shared_memory_attach_file(uint64_t dev, uint64_t ino, int rw_fd);

/* image_temporaries.c */
void image_tmp_name(char *buf, size_t len);
int image_create_temporary(const char *dir, const char *tmp_path, char *err,
			   size_t errlen);
void image_remove_leftovers(const char *dir);
int image_commit(const char *tmp_path, const char *final_path, char *err,
		 size_t errlen);

/* image_writer.c */
int image_write(uint64_t generation, int compress, int incremental,
		const char *dir,
		char *final_path, size_t pathlen, char *tmp_path,
		size_t tmplen, char *err, size_t errlen);
/* template_pid: NULL, or where a snapshot kept as a template process
 * (snapshot_template.c) gets its pid; 0 there when an image is written
 * instead. */
int image_write_forked(uint64_t generation, int compress, const char *dir,
		       char *final_path, size_t pathlen, char *tmp_path,
		       size_t tmplen, pid_t *template_pid, char *err,
		       size_t errlen);
int image_sync(const char *tmp_path, char *err, size_t errlen);

/* forked_copy.c: the copy of a forked checkpoint, after the resume */
int forked_copy_finish(int max_ms, char *err, size_t errlen);
void forked_copy_cancel(void);
int writer_add_region(struct image_writer *w, const struct ckpt_region *r,
		      const char *name);
int writer_add_extent(struct image_writer *w, uint64_t addr, uint64_t len);
int writer_add_fd(struct image_writer *w, const struct ckpt_fd_info *fi,
		  const char *path, int content_fd, uint64_t content_size);
int writer_add_fd_bytes(struct image_writer *w, const struct ckpt_fd_info *fi,
			const char *path, const void *mem, uint64_t size);
int writer_add_file(struct image_writer *w, const struct ckpt_file_record *f,
		    const char *path, int content_fd);
int writer_reserve_memory_tables(struct image_writer *w);
void writer_set_brk(struct image_writer *w, uint64_t start, uint64_t end);

/* extent_encode.c */
struct extent_encoder;
int extent_encoder_start(struct extent_encoder **out,
			 const struct ckpt_extent *e, uint64_t n, int compress);
int extent_encoder_next(struct extent_encoder *x, uint64_t job,
			struct ckpt_extent *result, const void **data);
void extent_encoder_stop(struct extent_encoder *x);

/* pipes.c */
void pipes_init_outside(const char *env);
void pipes_reset_outside(void);
void pipes_set_outside(int fd);
int pipes_is_outside(uint64_t ino);
extern char pipes_outside_env[];
void pipes_begin_round(uint64_t generation, const char *dir);
void pipes_end_round(void);
/* An object saved once per checkpoint round: kind "pipe", "sock" (dev 0,
 * the inode) or "fifo" (the FIFO's dev and inode). */
struct round_key {
	const char *kind;
	uint64_t dev, ino;
};
int pipes_refill(int fd, int memfd, uint64_t size);
int pipes_drain(int fd, const struct round_key *key, int *memfd,
		uint64_t *size);
int round_claim(const struct round_key *key);
/* "claim file PATH" or "checkpoint directory DIR" when round_claim could
 * not make its file this round, else "" */
const char *round_claim_failure(void);
int round_keep_memfd(int fd);

/* ptys.c */
int ptys_is_master(int fd, uint32_t *index);
int ptys_save_info(int fd, uint32_t index, uint64_t *size);
int ptys_handed_slave(const char *path);
int ptys_handed_master(uint32_t index);

/* sockets.c */
int sockets_unix_stream_peer(int fd, uint64_t ino, uint32_t *peer);
/* the caller holds the socket's round claim (pipes.c) */
int sockets_save_stream_bytes(int fd, int *memfd, uint64_t *size);
int sockets_peek_into(int fd, int memfd, uint64_t *size);
int sockets_unix_peer(uint64_t ino, uint32_t *peer);

/* unix_dgram.c: connected Unix datagram and seqpacket sockets */
int unix_dgram_kind(int fd, uint64_t ino, uint32_t *peer);
int unix_dgram_save_queue(int fd, uint64_t ino, int (*note_fd)(int fd),
			  int *memfd, uint64_t *size);
/* unix_dgram_save_queue once the caller holds the socket's claim */
int unix_queue_save_claimed(int fd, int (*note_fd)(int fd), int *memfd,
			    uint64_t *size);
/* the caller holds the socket's claim: the peeks move its peek offset */
int unix_stream_needs_messages(int fd);

/* tcp_diag.c: every TCP socket of the network namespace, asked at once */
struct tcp_diag_entry {
	uint64_t ino;
	int family, state;
	uint32_t rqueue, wqueue;	/* listener: wqueue is its backlog */
	uint32_t rcvbuf, sndbuf;
	int has_buffers;
	struct sockaddr_storage addr, peer;
};
void tcp_diag_load(void);
const struct tcp_diag_entry *tcp_diag_find(uint64_t ino);
void tcp_diag_release(void);

/* sockopt_batch.c: SOL_SOCKET options (or SIOCINQ) of many sockets at
 * once */
struct sockopt_read {
	int fd, name;
	void *val;
	socklen_t len;
	int siocinq;		/* 1: ask SIOCINQ, not the option name */
	int res;		/* the option's length (SIOCINQ: the bytes
				   to read), or -errno */
};
int sockopt_batch_read(struct sockopt_read *(*at)(size_t i), size_t n);

/* socket_state.c */
struct ckpt_socket_info;
int socket_state_save(int fd, uint64_t ino, struct ckpt_socket_info *si);
int socket_state_save_tcp(int fd, const struct tcp_diag_entry *e,
			  struct ckpt_socket_info *si);
void socket_state_read_deferred(void);
int socket_state_restore_closed(int fd, const struct ckpt_socket_info *si,
				int status_flags);
int socket_state_settle(int fd, int *budget_ms);

/* tcp_refill.c: bytes a TCP sender could not send before a checkpoint,
 * moved by its receiver and put back before the sender resumes */
void tcp_refill_begin_round(uint64_t generation, const char *dir);
void tcp_refill_forget(void);
int tcp_refill_note_stuck(int fd, const struct ckpt_socket_info *si);
int tcp_refill_save_queue(int fd, const struct ckpt_socket_info *si,
			  int memfd, uint64_t *size);
void tcp_refill_end_write(void);
void tcp_refill_before_resume(void);
void socket_state_restore_options(int fd, const struct ckpt_socket_info *si);

/* wrappers/signalfd_read.c: reads of this fd (a signalfd) name senders
 * by their virtual pids */
void signalfd_reads_note(int fd);

/* peer_creds.c: SO_PEERCRED as saved at the checkpoint */
struct ucred;
int peer_creds_saved(int fd, struct ucred *uc);

/* netlink.c */
int netlink_save(int fd, struct ckpt_socket_info *si);
void netlink_restore_options(int fd, const struct ckpt_socket_info *si);

/* multicast.c */
/* host_moves.c: the addresses of hosts the computation moved away from
 * (ckpt_restart --host-map). Take this restart's moves from the plan;
 * 0 or -errno. */
int host_moves_take(int plan_fd);
/* tcp_rest.c: the rest of TCP queues ckpt_restart could not put back;
 * take the plan's table (0 or -errno), then, after the restart barrier,
 * send what this process sends and wait for what it shares. */
int tcp_rest_take(int plan_fd, int (*move_fd)(int));
void tcp_rest_send(void);
/* files.c: the restored fd of the saved socket ino, or -1. */
int files_saved_socket_fd(uint64_t ino);
/* sa, or a copy in *moved with a moved host's new address. */
const struct sockaddr *host_moves_apply(const struct sockaddr *sa,
					socklen_t len,
					struct sockaddr_storage *moved);
int host_moves_any(void);
void host_moves_unapply(struct sockaddr *sa, socklen_t len);

int multicast_is_membership(int level, int name);
void multicast_note(int fd, int level, int name, const void *val,
		    unsigned int len);
void multicast_prune(void);
uint32_t multicast_count(int fd, uint64_t ino);
void multicast_rejoin(int fd, uint64_t old_ino);

/* udp_queue.c */
int udp_queue_save(int fd, int memfd, uint64_t *size, uint32_t *count);


/* shared_files.c */
void shared_begin_round(uint64_t generation, const char *dir);
int shared_add(int fd, uint64_t dev, uint64_t ino);
int shared_publish(void);
int shared_resolve(void);
int64_t shared_group_of(int fd);

/* handover.c */
int handover_take_plan(int plan_fd, int (*move_fd)(int));
uint64_t handover_restart_group(uint32_t *nprocs);
int handover_pipe_end(uint64_t ino, int write_end);
int handover_shared_file(pid_t vpid, int fd);
int handover_sets_state(pid_t vpid, int fd);
void handover_state_set(int plan_fd, pid_t vpid, int fd);
int handover_wait_state(int plan_fd, pid_t vpid, int fd, int timeout_ms);
int handover_socket_end(uint64_t ino);
void handover_close_all(void);

/* restart_barrier.c */
void restart_barrier_open(int plan_fd, pid_t vpid);
void restart_barrier_fail(void);
void restart_barrier_wait(void);

/* checkpoint.c */
int checkpoint_suspend(uint64_t generation, const char *dir, char *err,
		       size_t errlen);
int checkpoint_write(uint64_t generation, int compress, int incremental,
		     int forked, pid_t *template_pid, const char *dir,
		     char *path, size_t pathlen, char *tmp, size_t tmplen,
		     char *err, size_t errlen);
#define CKPT_RESTARTED 1
int checkpoint_restore_resources(const struct ckpt_restart_args *args);

/* manager.c */
/* ordered_dir.c: 0 when the ckpt_dir of a DO_SUSPEND/DO_WRITE may be
 * used ("" or our own CKPT_DIR, or a directory only our user controls);
 * else -EPERM/-errno, err says why (and the log). */
int ordered_dir_check(const char *dir, char *err, size_t errlen);

int manager_start(void);
void namespaces_take_base(const char *env);
void namespaces_rebase(void);
int namespaces_own_uts(void);
void namespaces_env(char *buf, size_t len);
int manager_leave(void);
void manager_come_back(void);
int ckpt_real_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			     void *(*fn)(void *), void *arg);
void manager_wait_started(void);
int manager_stack_overlaps(uint64_t addr, uint64_t len);
int threads_park_area_overlaps(uint64_t addr, uint64_t len);
void manager_after_restart(uint64_t image_generation);

/* The in-process API (include/ckpt.h, docs/embedding.md) */
/* embedding.c */
void embedding_enable(void);
int api_enabled(void);
void embedding_note_restored(void);
unsigned embedding_restored_epoch(void);
/* checkpoint_request.c */
int api_checkpoint(void);
int api_snapshot(uint64_t *id);
/* delay_sections.c */
void gate_close(void);
void gate_open(void);
int gate_wait_open(int timeout_ms);
int sections_wait_ended(int64_t deadline_ms);
int sections_open_here(void);
void sections_after_fork_in_child(void);
int api_delay_begin(void);
int api_delay_end(void);
/* hooks.c: the program's part of a round (manager.c, threads.c) */
int hooks_round_begin(char *err, size_t errlen);
void hooks_round_resumed(void);
void hooks_round_restarted(void);
void hooks_after_fork_in_child(void);
int hooks_running_here(void);
enum ckpt_event;
typedef void (*ckpt_hook_fn)(enum ckpt_event event, void *arg);
int api_hook_add(enum ckpt_event event, ckpt_hook_fn fn, void *arg);
/* futex.c */
int ckpt_futex_wait_until(int *addr, int val, int64_t deadline_ms);
void ckpt_futex_wake(int *addr);

/* restore.c */
void ckpt_restore_entry(struct ckpt_restart_args *args)
	__attribute__((noreturn));
extern char ckpt_restore_stack[];
extern const size_t ckpt_restore_stack_size;

/* wrappers/exec.c */
void exec_remember_environment(const char *libckpt_path);

/* wrappers/proc_paths.c */
int proc_paths_saved_path(char *path, size_t len);

/* vpid/vpid.c */
void vpid_init(pid_t vpid, pid_t real);
pid_t vpid_self(void);
pid_t vpid_getpid(void);
pid_t vpid_virt_from_real(pid_t real);
pid_t vpid_real_from_virt(pid_t virt);
void vpid_map(pid_t virt, pid_t real);
void vpid_reset_after_fork(void);
void vpid_forget_real(pid_t real);
unsigned vpid_epoch(void);
pid_t vpid_virt_from_real_since(pid_t real, unsigned then);
size_t vpid_format_translated(char *buf, size_t len);
void vpid_load_translated(const char *s);
int vpid_load_plan(int plan_fd);
int vpid_known(pid_t virt);
int vpid_known_before_restart(pid_t virt);
/* real is the virtual pid of another process (restored with another
 * real pid): a new child with this real pid must not keep it */
int vpid_taken_by_another(pid_t real);

#endif /* CKPT_INTERNAL_H */
