/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * system() and popen()/pclose(), done here through the wrapped
 * posix_spawn and waitpid. glibc's own versions spawn and wait with
 * internal calls no preload can see: the shell they start would not get
 * the computation's settings (it would take the pipe to its parent for
 * one leading outside the computation), and pclose() after a restart
 * would wait for the shell's old pid, which is no child any more. The
 * behaviour is glibc's: "/bin/sh -c", SIGINT and SIGQUIT ignored and
 * SIGCHLD blocked while system() waits, the child with the default
 * actions and the caller's mask; popen() modes "r", "w", with "e" for
 * close-on-exec, and a child that does not inherit earlier popen streams.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "wrappers.h"

#define SHELL_PATH	"/bin/sh"
#define POPEN_MAX	256

extern char **environ;

DEFINE_NEXT(pclose);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_shell(void)
{
	RESOLVE_NEXT(pclose);
}

static int spawn_shell(pid_t *pid, const char *command,
		       const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr)
{
	char *argv[] = { "sh", "-c", "--", (char *)command, NULL };

	return posix_spawn(pid, SHELL_PATH, fa, attr, argv, environ);
}

static pid_t wait_child(pid_t pid, int *status)
{
	pid_t r;

	do
		r = waitpid(pid, status, 0);
	while (r < 0 && errno == EINTR);
	return r;
}

/* ----- system ----- */

/* Concurrent system() calls share one ignoring of SIGINT and SIGQUIT. */
static pthread_mutex_t system_lock = PTHREAD_MUTEX_INITIALIZER;
static int system_users;
static struct sigaction saved_int, saved_quit;

static void system_ignore_signals(void)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };

	pthread_mutex_lock(&system_lock);
	if (system_users++ == 0) {
		sigemptyset(&ign.sa_mask);
		sigaction(SIGINT, &ign, &saved_int);
		sigaction(SIGQUIT, &ign, &saved_quit);
	}
	pthread_mutex_unlock(&system_lock);
}

static void system_restore_signals(void)
{
	pthread_mutex_lock(&system_lock);
	if (--system_users == 0) {
		sigaction(SIGINT, &saved_int, NULL);
		sigaction(SIGQUIT, &saved_quit, NULL);
	}
	pthread_mutex_unlock(&system_lock);
}

static int run_system(const char *command, const sigset_t *caller_mask)
{
	posix_spawnattr_t attr;
	sigset_t defaults;
	int status, r;
	pid_t pid;

	sigemptyset(&defaults);
	sigaddset(&defaults, SIGINT);
	sigaddset(&defaults, SIGQUIT);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigdefault(&attr, &defaults);
	posix_spawnattr_setsigmask(&attr, caller_mask);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF |
					POSIX_SPAWN_SETSIGMASK);
	r = spawn_shell(&pid, command, NULL, &attr);
	posix_spawnattr_destroy(&attr);
	if (r != 0)
		return W_EXITCODE(127, 0); /* as a shell that cannot run */
	return wait_child(pid, &status) < 0 ? -1 : status;
}

CKPT_WRAPPER int system(const char *command)
{
	sigset_t chld, caller_mask;
	int status, saved_errno;

	if (!command)
		return access(SHELL_PATH, X_OK) == 0;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	system_ignore_signals();
	sigprocmask(SIG_BLOCK, &chld, &caller_mask);
	status = run_system(command, &caller_mask);
	saved_errno = errno;
	sigprocmask(SIG_SETMASK, &caller_mask, NULL);
	system_restore_signals();
	errno = saved_errno;
	return status;
}

/* ----- popen / pclose ----- */

struct popen_stream {
	FILE *fp;		/* NULL: free slot */
	pid_t pid;		/* the shell, as the program sees it */
};

static pthread_mutex_t popen_lock = PTHREAD_MUTEX_INITIALIZER;
static struct popen_stream streams[POPEN_MAX];

/* "r" or "w", then any of "e" (close-on-exec); 'r' or 'w', or 0. */
static int popen_direction(const char *mode, int *cloexec)
{
	int dir = mode ? mode[0] : 0;

	*cloexec = 0;
	if (dir != 'r' && dir != 'w')
		return 0;
	for (const char *m = mode + 1; *m; m++) {
		if (*m != 'e')
			return 0;
		*cloexec = 1;
	}
	return dir;
}

/* Both ends of a new pipe at 3 or above (so the child's dup2 onto 0 or 1
 * never finds its own end there), close-on-exec. */
static int make_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		if (fds[i] > 2)
			continue;
		int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);

		close(fds[i]);
		fds[i] = moved;
	}
	if (fds[0] >= 0 && fds[1] >= 0)
		return 0;
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return -1;
}

/* The child's stdin or stdout becomes its end; it closes the parent
 * ends of every earlier popen stream (POSIX). Called with popen_lock. */
static int popen_actions(posix_spawn_file_actions_t *fa, int child_end,
			 int target)
{
	int r = posix_spawn_file_actions_adddup2(fa, child_end, target);

	for (int i = 0; r == 0 && i < POPEN_MAX; i++)
		if (streams[i].fp && fileno(streams[i].fp) != target)
			r = posix_spawn_file_actions_addclose(
				fa, fileno(streams[i].fp));
	return r;
}

static struct popen_stream *free_stream(void)
{
	for (int i = 0; i < POPEN_MAX; i++)
		if (!streams[i].fp)
			return &streams[i];
	return NULL;
}

static FILE *start_popen(const char *command, int dir, int cloexec,
			 struct popen_stream *slot)
{
	posix_spawn_file_actions_t fa;
	int fds[2], mine, theirs, r;
	FILE *fp = NULL;
	pid_t pid;

	if (make_pipe(fds) < 0)
		return NULL;
	mine = dir == 'r' ? fds[0] : fds[1];
	theirs = dir == 'r' ? fds[1] : fds[0];
	posix_spawn_file_actions_init(&fa);
	r = popen_actions(&fa, theirs, dir == 'r' ? 1 : 0);
	if (r == 0)
		r = spawn_shell(&pid, command, &fa, NULL);
	posix_spawn_file_actions_destroy(&fa);
	close(theirs);
	if (r == 0 && (cloexec || fcntl(mine, F_SETFD, 0) == 0))
		fp = fdopen(mine, dir == 'r' ? "r" : "w");
	if (!fp) {
		int e = r ? r : errno;

		close(mine);
		if (r == 0)
			wait_child(pid, &r);
		errno = e;
		return NULL;
	}
	slot->fp = fp;
	slot->pid = pid;
	return fp;
}

CKPT_WRAPPER FILE *popen(const char *command, const char *mode)
{
	struct popen_stream *slot;
	int cloexec, dir = popen_direction(mode, &cloexec);
	FILE *fp;

	if (!dir || !command) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&popen_lock);
	slot = free_stream();
	fp = slot ? start_popen(command, dir, cloexec, slot) : NULL;
	if (!slot)
		errno = EMFILE;
	pthread_mutex_unlock(&popen_lock);
	return fp;
}

CKPT_WRAPPER int pclose(FILE *fp)
{
	pid_t pid = 0;
	int status;

	pthread_mutex_lock(&popen_lock);
	for (int i = 0; i < POPEN_MAX; i++)
		if (fp && streams[i].fp == fp) {
			pid = streams[i].pid;
			streams[i].fp = NULL;
			break;
		}
	pthread_mutex_unlock(&popen_lock);
	if (!pid) /* not ours: a stream glibc's popen made */
		return NEXT_FN(pclose)(fp);
	fclose(fp);
	return wait_child(pid, &status) < 0 ? -1 : status;
}
