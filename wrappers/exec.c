/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec keeps the new program in the computation: whatever environment the
 * program passes, the new image gets LD_PRELOAD with libckpt and the
 * CKPT_* settings back, plus CKPT_VPID so it keeps the virtual pid (the
 * pid does not change across exec) and CKPT_VPIDS, the pids it may name
 * that differ from the real ones (after a restart). Programs libckpt
 * cannot enter (static, set-ID) leave the computation with a message and
 * run exactly as without ckpt: none of our variables, libckpt out of
 * LD_PRELOAD (so their own children stay outside too: valgrind's guest),
 * the program's signal mask and the checkpoint signal ignored.
 * Everything here may run in a vfork child: no malloc, stack only.
 */
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "wrappers.h"

extern char **environ;

DEFINE_NEXT(execve);
DEFINE_NEXT(execvpe);
DEFINE_NEXT(fexecve);
DEFINE_NEXT(posix_spawn);
DEFINE_NEXT(posix_spawnp);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_exec(void)
{
	RESOLVE_NEXT(execve);
	RESOLVE_NEXT(execvpe);
	RESOLVE_NEXT(fexecve);
	RESOLVE_NEXT(posix_spawn);
	RESOLVE_NEXT(posix_spawnp);
}

#define ENV_EXTRA 17
#define ENV_VPIDS_MAX (32 * 1024)	/* CKPT_VPIDS, on the stack */

static char env_preload[4200];	/* "LD_PRELOAD=<libckpt>[:<others>]" */
static char env_coord[600], env_dir[4200], env_signal[32];
static char env_record[1100];	/* "CKPT_RECORD_INPUTS=<base>.exec" */
static char env_epoch[64];	/* "CKPT_EPOCH=<generation>:<computation>" */
static char env_ns[128];	/* "CKPT_NS=<inodes>" (process.c) */
static char env_host[80];	/* "CKPT_HOST=<host name>" (manager.c) */
static char exe_path[4096];	/* the program, for /proc/self/exe */
static char libckpt[4096];	/* our own path, as LD_PRELOAD names it */

/* Called once at start-up, while the environment is still ours. */
void exec_remember_environment(const char *libckpt_path)
{
	const char *pre = getenv("LD_PRELOAD");
	ssize_t n;

	ckpt_fmt(libckpt, sizeof(libckpt), "%s", libckpt_path);
	if (pre && strstr(pre, libckpt_path))
		ckpt_fmt(env_preload, sizeof(env_preload), "LD_PRELOAD=%s",
			 pre);
	else
		ckpt_fmt(env_preload, sizeof(env_preload), "LD_PRELOAD=%s%s%s",
			 libckpt_path, pre && *pre ? ":" : "", pre ? pre : "");
	ckpt_fmt(env_coord, sizeof(env_coord), "CKPT_COORD=%s",
		 ckpt.coord_addr);
	ckpt_fmt(env_dir, sizeof(env_dir), "CKPT_DIR=%s", ckpt.ckpt_dir);
	n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	exe_path[n > 0 ? n : 0] = 0;
}

/* After a restart the kernel's /proc/self/exe is the restart loader: an
 * exec of it means the program, as it was launched. */
static const char *program_path(const char *path)
{
	char own[64], virt[64], now[4096];
	ssize_t n;

	if (!exe_path[0] || strncmp(path, "/proc/", 6))
		return path;
	n = readlink("/proc/self/exe", now, sizeof(now) - 1);
	if (n > 0 && (size_t)n == strlen(exe_path) &&
	    !memcmp(now, exe_path, n))
		return path; /* not restarted: the kernel's is right */
	ckpt_fmt(own, sizeof(own), "/proc/%d/exe", (int)ckpt_real_getpid());
	ckpt_fmt(virt, sizeof(virt), "/proc/%d/exe", (int)ckpt.vpid);
	if (!strcmp(path, "/proc/self/exe") || !strcmp(path, own) ||
	    !strcmp(path, virt))
		return exe_path;
	return path;
}

static int names_var(const char *entry, const char *var)
{
	size_t n = strlen(var);

	return !strncmp(entry, var, n) && entry[n] == '=';
}

static int is_ours(const char *entry)
{
	return names_var(entry, "LD_PRELOAD") ||
	       names_var(entry, "CKPT_COORD") ||
	       names_var(entry, "CKPT_DIR") ||
	       names_var(entry, "CKPT_COMPRESS") ||
	       names_var(entry, "CKPT_SIGNAL") ||
	       names_var(entry, "CKPT_SIGNAL_INHERITED") ||
	       names_var(entry, "CKPT_VPID") ||
	       names_var(entry, "CKPT_VPIDS") ||
	       names_var(entry, "CKPT_EPOCH") ||
	       names_var(entry, "CKPT_LAUNCHED") ||
	       names_var(entry, "CKPT_NS") ||
	       names_var(entry, "CKPT_HOST") ||
	       names_var(entry, "CKPT_OUTSIDE") ||
	       names_var(entry, "CKPT_SAVE_FILES") ||
	       names_var(entry, "CKPT_TMP_FILE_MAX") ||
	       names_var(entry, "CKPT_RECORD_INPUTS");
}

/* "LD_PRELOAD=<value without libckpt>" in out; 0 when nothing is left.
 * ld.so takes spaces and colons between the names. */
static int preload_without_us(const char *value, char *out, size_t len)
{
	size_t at, start;

	ckpt_fmt(out, len, "LD_PRELOAD=");
	at = start = strlen(out);
	while (*value) {
		size_t n = strcspn(value, ": ");

		if (n && (n != strlen(libckpt) || strncmp(value, libckpt, n)) &&
		    at + n + 2 < len) {
			if (at > start)
				out[at++] = ':';
			memcpy(out + at, value, n);
			at += n;
		}
		value += n;
		value += *value ? 1 : 0;
	}
	out[at] = 0;
	return at > start;
}

/* envp as the program gave it, without ckpt: for a program that leaves
 * the computation. `out` has room for count(envp) + 1 entries. */
static void build_env_outside(char *const envp[], const char **out,
			      char *preload, size_t preload_len)
{
	size_t n = 0;

	for (size_t i = 0; envp && envp[i]; i++) {
		if (names_var(envp[i], "LD_PRELOAD") &&
		    preload_without_us(envp[i] + 11, preload, preload_len))
			out[n++] = preload;
		if (!is_ours(envp[i]))
			out[n++] = envp[i];
	}
	out[n] = NULL;
}

/* Recording inputs and the lock order (the gdb extension): the new
 * image keeps the vpid but starts its events from 0, so it records under
 * a name of its own, <base>.exec, never replaying the old image's
 * entries; a re-execution from before the exec makes the same name. */
static size_t record_env(const char **out)
{
	const char *base = record_inputs_path();

	if (!base)
		return 0;
	ckpt_fmt(env_record, sizeof(env_record), "CKPT_RECORD_INPUTS=%s.exec",
		 base);
	out[0] = env_record;
	return 1;
}

/* envp without our variables, then ours; `out` has room for
 * count(envp) + ENV_EXTRA + 1 entries. A program that set LD_PRELOAD
 * itself keeps its libraries after libckpt. */
static void build_env(char *const envp[], const char **out, char *vpid_var,
		      size_t vpid_len, char *preload, size_t preload_len,
		      char *vpids_var, size_t vpids_len)
{
	pid_t real = ckpt_real_getpid(), self = ckpt.vpid, parent = ckpt.vppid;
	size_t n = 0;

	/* A vfork or posix_spawn child runs in its parent's memory, so
	 * ckpt names the parent: the program it execs is a new process,
	 * known by its own pid, whose parent is us. */
	if (real != vpid_real_from_virt(ckpt.vpid)) {
		self = real;
		parent = ckpt.vpid;
	}
	ckpt_fmt(preload, preload_len, "%s", env_preload);
	for (size_t i = 0; envp && envp[i]; i++) {
		if (names_var(envp[i], "LD_PRELOAD") &&
		    !strstr(env_preload, envp[i] + 11))
			ckpt_fmt(preload, preload_len, "%s:%s", env_preload,
				 envp[i] + 11);
		if (!is_ours(envp[i]))
			out[n++] = envp[i];
	}
	ckpt_fmt(vpid_var, vpid_len, "CKPT_VPID=%d:%d:%d", (int)self, (int)real,
		 (int)parent);
	ckpt_fmt(vpids_var, vpids_len, "CKPT_VPIDS=");
	vpid_format_translated(vpids_var + 11, vpids_len - 11);
	out[n++] = preload;
	out[n++] = env_coord;
	out[n++] = env_dir;
	/* the signal blocked for the exec: stable until it is done */
	ckpt_signal_env(env_signal, sizeof(env_signal));
	out[n++] = env_signal;
	out[n++] = vpid_var;
	out[n++] = pipes_outside_env;
	n += saved_files_env(out + n);
	if (ckpt.compress)
		out[n++] = "CKPT_COMPRESS=1";
	if (vpids_var[11])
		out[n++] = vpids_var;
	if (created_journal_env(env_epoch, sizeof(env_epoch)))
		out[n++] = env_epoch;
	/* the process ckpt_launch became stays it through its execs */
	if (ckpt.launched && self == ckpt.vpid)
		out[n++] = "CKPT_LAUNCHED=1";
	/* the namespaces the computation runs in, for one made later
	 * (process.c, note_namespaces) */
	namespaces_env(env_ns, sizeof(env_ns));
	out[n++] = env_ns;
	ckpt_fmt(env_host, sizeof(env_host), "CKPT_HOST=%s", ckpt.hostname);
	out[n++] = env_host;
	n += record_env(out + n);
	out[n] = NULL;
}

static size_t env_count(char *const envp[])
{
	size_t n = 0;

	while (envp && envp[n])
		n++;
	return n;
}

/* 1 when the ELF file names no dynamic loader, 0 otherwise. */
static int is_static_elf(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY | O_CLOEXEC), interp = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return 0;
	}
	for (int i = 0; i < eh.e_phnum && !interp; i++)
		interp = pread(fd, &ph, sizeof(ph), eh.e_phoff +
			       (off_t)i * eh.e_phentsize) == sizeof(ph) &&
			 ph.p_type == PT_INTERP;
	close(fd);
	return !interp;
}

/* The file execvp and posix_spawnp run for `file`: searched in the
 * caller's PATH as they do; `file` itself when it names a path. */
static const char *searched_path(const char *file, char *buf, size_t len)
{
	const char *path = getenv("PATH");

	if (strchr(file, '/'))
		return file;
	if (!path)
		path = "/bin:/usr/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		ckpt_fmt(buf, len, "%.*s/%s", n ? (int)n : 1, n ? path : ".",
			 file);
		if (access(buf, X_OK) == 0)
			return buf;
		path += n + (path[n] ? 1 : 0);
	}
	return file;
}

/* 1 when libckpt cannot follow the exec of the file at path (said once
 * by the process that leaves). */
static int leaves_computation(const char *path)
{
	struct stat st;

	if (!strchr(path, '/'))
		return 0;	/* not found: the exec fails */
	if (is_static_elf(path)) {
		if (ckpt.coord_addr[0])
			ckpt_log("exec of %s: statically linked, libckpt cannot"
				 " follow; it runs without checkpoints", path);
		return 1;
	}
	if (stat(path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID))) {
		if (ckpt.coord_addr[0])
			ckpt_log("exec of %s: set-user/group-ID: libckpt "
				 "does not follow a program that may run with "
				 "other privileges; it runs without "
				 "checkpoints", path);
		return 1;
	}
	return 0;
}

/* Room for CKPT_VPIDS=...: nothing but the name before any restart. */
static size_t vpids_var_size(void)
{
	size_t need = vpid_format_translated(NULL, 0);

	return 11 + (need < ENV_VPIDS_MAX ? need : ENV_VPIDS_MAX);
}

/* The kernel's view of a signal action (rt_sigaction). */
struct kernel_action {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/* Just before an exec that leaves the computation: the checkpoint signal
 * ignored (one sent meanwhile is dropped instead of staying pending in a
 * program that has no handler for it; SIG_IGN is all the program sees of
 * it) and the program's own mask. */
static void leave_signals(struct kernel_action *saved, const sigset_t *mask)
{
	struct kernel_action ign = { SIG_IGN, 0, NULL, 0 };

	syscall(SYS_rt_sigaction, ckpt.signal, &ign, saved, _NSIG / 8);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, mask, NULL, _NSIG / 8);
}

/* The exec failed: back in the computation. */
static void rejoin_signals(const struct kernel_action *saved)
{
	threads_mask_ckpt_signal(SIG_BLOCK, NULL);
	syscall(SYS_rt_sigaction, ckpt.signal, saved, NULL, _NSIG / 8);
}

/* A spawned program that leaves gets the caller's signal mask, not the
 * one with the checkpoint signal blocked for the spawn. */
static const posix_spawnattr_t *spawn_attr(const posix_spawnattr_t *attr,
					   posix_spawnattr_t *own,
					   const sigset_t *mask, int leaving)
{
	short flags = 0;

	if (!leaving || (attr && posix_spawnattr_getflags(attr, &flags) == 0 &&
			 (flags & POSIX_SPAWN_SETSIGMASK)))
		return attr;
	if (attr)
		*own = *attr;
	else
		posix_spawnattr_init(own);
	posix_spawnattr_setsigmask(own, mask);
	posix_spawnattr_setflags(own, flags | POSIX_SPAWN_SETSIGMASK);
	return own;
}

/*
 * Everything is chosen with the checkpoint signal blocked: a checkpoint
 * between choosing and the exec would restart the process with choices
 * made before the restart (/proc/self/exe, which is then the restart
 * loader; the real pid in CKPT_VPID; the pid map). `probe`: the file
 * that will run, to tell whether libckpt can follow it (the path the
 * program named may be changed to the program's, see program_path);
 * `spawn`: a new process runs it (the caller's signals stay as they
 * are). In `call`: newenv, and old_ the caller's signal mask.
 * A checkpoint signal that arrives while the exec is under way would
 * stay pending into the new program, which has no handler yet: blocked
 * for the exec, the new libckpt takes it (and ignores it) once its
 * handler is in.
 */
#define EXEC_CALL(probe, spawn, envp, call)                                \
	({                                                                 \
		sigset_t old_ = ckpt_block_checkpoints();                  \
		struct kernel_action act_;                                 \
		int leaving_ = leaves_computation(probe);                  \
		size_t nvpids_ = leaving_ ? 1 : vpids_var_size();          \
		const char *env_[env_count(envp) + ENV_EXTRA + 1];         \
		char vpid_[64], preload_[sizeof(env_preload) + 4200];      \
		char vpids_[nvpids_];                                      \
		if (leaving_)                                              \
			build_env_outside(envp, env_, preload_,            \
					  sizeof(preload_));               \
		else                                                       \
			build_env(envp, env_, vpid_, sizeof(vpid_),        \
				  preload_, sizeof(preload_), vpids_,      \
				  nvpids_);                                \
		manager_wait_image_settled();                              \
		char *const *newenv = (char *const *)env_;                 \
		if (leaving_ && !(spawn))                                  \
			leave_signals(&act_, &old_);                       \
		int r_ = (call), e_ = errno;                               \
		if (leaving_ && !(spawn))                                  \
			rejoin_signals(&act_);                             \
		ckpt_restore_mask(&old_);                                  \
		errno = e_;                                                \
		r_;                                                        \
	})

/* The program's path, for execve and posix_spawn, chosen at the call. */
#define AS_PROGRAM(path) ((path) = program_path(path))

CKPT_WRAPPER int execve(const char *path, char *const argv[],
			char *const envp[])
{
	return EXEC_CALL(AS_PROGRAM(path), 0, envp,
			 NEXT_FN(execve)(path, argv, newenv));
}

CKPT_WRAPPER int execvpe(const char *file, char *const argv[],
			 char *const envp[])
{
	char found[PATH_MAX];

	return EXEC_CALL(searched_path(AS_PROGRAM(file), found,
					     sizeof(found)), 0, envp,
			 NEXT_FN(execvpe)(file, argv, newenv));
}

CKPT_WRAPPER int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

CKPT_WRAPPER int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

CKPT_WRAPPER int fexecve(int fd, char *const argv[], char *const envp[])
{
	char probe[64];

	ckpt_fmt(probe, sizeof(probe), "/proc/self/fd/%d", fd);
	return EXEC_CALL(probe, 0, envp,
			 NEXT_FN(fexecve)(fd, argv, newenv));
}

/* The execl family: count the arguments, then an array of just that size
 * on the stack (as glibc does), then as above. */
static size_t count_args(const char *first, va_list ap)
{
	va_list copy;
	size_t n = first ? 1 : 0;

	va_copy(copy, ap);
	while (first && va_arg(copy, char *))
		n++;
	va_end(copy);
	return n;
}

static void collect_args(const char *first, va_list ap, char **argv,
			 size_t n)
{
	argv[0] = (char *)first;
	for (size_t i = 1; i < n; i++)
		argv[i] = va_arg(ap, char *);
	argv[n] = NULL;
}

CKPT_WRAPPER int execl(const char *path, const char *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	size_t n = count_args(arg, ap);
	char *argv[n + 1];

	collect_args(arg, ap, argv, n);
	va_end(ap);
	return execve(path, argv, environ);
}

CKPT_WRAPPER int execlp(const char *file, const char *arg, ...)
{
	va_list ap;

	va_start(ap, arg);
	size_t n = count_args(arg, ap);
	char *argv[n + 1];

	collect_args(arg, ap, argv, n);
	va_end(ap);
	return execvpe(file, argv, environ);
}

CKPT_WRAPPER int execle(const char *path, const char *arg, ...)
{
	char *const *envp;
	va_list ap;

	va_start(ap, arg);
	size_t n = count_args(arg, ap);
	char *argv[n + 1];

	collect_args(arg, ap, argv, n);
	va_arg(ap, char *);	/* the NULL ending the arguments */
	envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

/* The child's real pid was free: an entry naming it is stale. A clash
 * with a restored process's virtual pid cannot be undone here (the child
 * already runs its program, unlike a fork's: wrappers/fork.c). */
static void note_spawned(int r, const pid_t *pid, unsigned epoch)
{
	sigset_t old;
	int clash = 0;

	if (r != 0 || !pid)
		return;
	old = ckpt_block_checkpoints();
	/* restarted since: *pid is the child's virtual pid already */
	if (vpid_epoch() == epoch) {
		vpid_forget_real(*pid);
		clash = vpid_taken_by_another(*pid);
	}
	ckpt_restore_mask(&old);
	if (clash)
		ckpt_log("posix_spawn: the new child's pid %d is the pid of "
			 "another restored process; both answer to it",
			 (int)*pid);
}

CKPT_WRAPPER int posix_spawn(pid_t *pid, const char *path,
			     const posix_spawn_file_actions_t *fa,
			     const posix_spawnattr_t *attr,
			     char *const argv[], char *const envp[])
{
	posix_spawnattr_t own;
	unsigned epoch = vpid_epoch();
	int r;

	r = EXEC_CALL(AS_PROGRAM(path), 1, envp,
		NEXT_FN(posix_spawn)(pid, path, fa,
				     spawn_attr(attr, &own, &old_, leaving_),
				     argv, newenv));
	note_spawned(r, pid, epoch);
	return r;
}

CKPT_WRAPPER int posix_spawnp(pid_t *pid, const char *file,
			      const posix_spawn_file_actions_t *fa,
			      const posix_spawnattr_t *attr,
			      char *const argv[], char *const envp[])
{
	char found[PATH_MAX];
	posix_spawnattr_t own;
	unsigned epoch = vpid_epoch();
	int r;

	r = EXEC_CALL(searched_path(AS_PROGRAM(file), found,
					  sizeof(found)), 1, envp,
		NEXT_FN(posix_spawnp)(pid, file, fa,
				      spawn_attr(attr, &own, &old_, leaving_),
				      argv, newenv));
	note_spawned(r, pid, epoch);
	return r;
}
