/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec keeps the new program in the computation: whatever environment the
 * program passes, the new image gets LD_PRELOAD with libckpt and the
 * CKPT_* settings back, plus CKPT_VPID so it keeps the virtual pid (the
 * pid does not change across exec). Programs libckpt cannot enter
 * (static, set-ID) still run, with a message saying they leave.
 * Everything here may run in a vfork child: no malloc, stack only.
 */
#include <elf.h>
#include <fcntl.h>
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

__attribute__((constructor)) static void resolve_next_exec(void)
{
	RESOLVE_NEXT(execve);
	RESOLVE_NEXT(execvpe);
	RESOLVE_NEXT(fexecve);
	RESOLVE_NEXT(posix_spawn);
	RESOLVE_NEXT(posix_spawnp);
}

#define ENV_EXTRA 9

static char env_preload[4200];	/* "LD_PRELOAD=<libckpt>[:<others>]" */
static char env_coord[600], env_dir[4200], env_signal[32];
static char exe_path[4096];	/* the program, for /proc/self/exe */

/* Called once at start-up, while the environment is still ours. */
void exec_remember_environment(const char *libckpt_path)
{
	const char *pre = getenv("LD_PRELOAD");
	ssize_t n;

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

/* A checkpoint signal that arrives while the exec is under way would stay
 * pending into the new program, which has no handler yet: blocked here,
 * the new libckpt takes it (and ignores it) once its handler is in. */
static sigset_t block_ckpt_signal(void)
{
	sigset_t old;

	threads_mask_ckpt_signal(SIG_BLOCK, &old);
	return old;
}

static void restore_signal_mask(const sigset_t *old)
{
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, old, NULL, _NSIG / 8);
}

#define EXEC_CALL(call)                                                    \
	({                                                                 \
		sigset_t old_ = block_ckpt_signal();                       \
		int r_ = (call), e_ = errno;                               \
		restore_signal_mask(&old_);                                \
		errno = e_;                                                \
		r_;                                                        \
	})

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
	       names_var(entry, "CKPT_SIGNAL") ||
	       names_var(entry, "CKPT_SIGNAL_INHERITED") ||
	       names_var(entry, "CKPT_VPID") ||
	       names_var(entry, "CKPT_OUTSIDE") ||
	       names_var(entry, "CKPT_SAVE_FILES") ||
	       names_var(entry, "CKPT_TMP_FILE_MAX");
}

/* envp without our variables, then ours; `out` has room for
 * count(envp) + ENV_EXTRA + 1 entries. A program that set LD_PRELOAD
 * itself keeps its libraries after libckpt. */
static void build_env(char *const envp[], const char **out, char *vpid_var,
		      size_t vpid_len, char *preload, size_t preload_len)
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
	out[n++] = preload;
	out[n++] = env_coord;
	out[n++] = env_dir;
	/* the signal blocked for the exec: stable until it is done */
	ckpt_signal_env(env_signal, sizeof(env_signal));
	out[n++] = env_signal;
	out[n++] = vpid_var;
	out[n++] = pipes_outside_env;
	n += saved_files_env(out + n);
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

static void warn_if_leaving(const char *path)
{
	struct stat st;

	if (!ckpt.coord_addr[0] || !strchr(path, '/'))
		return;
	if (is_static_elf(path))
		ckpt_log("exec of %s: statically linked, libckpt cannot follow;"
			 " it runs without checkpoints", path);
	else if (stat(path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
		ckpt_log("exec of %s: set-user/group-ID, the loader ignores "
			 "LD_PRELOAD; it runs without checkpoints", path);
}

#define WITH_CKPT_ENV(envp, call)                                          \
	({                                                                 \
		const char *env_[env_count(envp) + ENV_EXTRA + 1];         \
		char vpid_[64], preload_[sizeof(env_preload) + 4200];      \
		build_env(envp, env_, vpid_, sizeof(vpid_), preload_,      \
			  sizeof(preload_));                               \
		manager_wait_image_settled();                              \
		char *const *newenv = (char *const *)env_;                 \
		(call);                                                    \
	})

/* The path, the warning and the environment are chosen inside EXEC_CALL,
 * with the checkpoint signal blocked: a checkpoint between choosing them
 * and the exec would restart the process with choices made before the
 * restart (/proc/self/exe, which is then the restart loader; the real pid
 * in CKPT_VPID). */
#define PREPARED(pathvar, warn, envp, call)                                \
	({                                                                 \
		pathvar = program_path(pathvar);                           \
		if (warn)                                                  \
			warn_if_leaving(pathvar);                          \
		WITH_CKPT_ENV(envp, call);                                 \
	})

CKPT_WRAPPER int execve(const char *path, char *const argv[],
			char *const envp[])
{
	return EXEC_CALL(PREPARED(path, 1, envp, NEXT_FN(execve)(path, argv,
							       newenv)));
}

CKPT_WRAPPER int execvpe(const char *file, char *const argv[],
			 char *const envp[])
{
	return EXEC_CALL(PREPARED(file, 1, envp, NEXT_FN(execvpe)(file, argv,
								newenv)));
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
	return EXEC_CALL(WITH_CKPT_ENV(envp, NEXT_FN(fexecve)(fd, argv,
							       newenv)));
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

CKPT_WRAPPER int posix_spawn(pid_t *pid, const char *path,
			     const posix_spawn_file_actions_t *fa,
			     const posix_spawnattr_t *attr,
			     char *const argv[], char *const envp[])
{
	return EXEC_CALL(PREPARED(path, 1, envp,
		NEXT_FN(posix_spawn)(pid, path, fa, attr, argv, newenv)));
}

CKPT_WRAPPER int posix_spawnp(pid_t *pid, const char *file,
			      const posix_spawn_file_actions_t *fa,
			      const posix_spawnattr_t *attr,
			      char *const argv[], char *const envp[])
{
	return EXEC_CALL(PREPARED(file, 0, envp,
		NEXT_FN(posix_spawnp)(pid, file, fa, attr, argv, newenv)));
}
