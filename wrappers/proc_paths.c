/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Paths under /proc name processes by pid. After a restart the program
 * still uses its virtual pids, so /proc/<vpid>[/task/<vtid>]/... is
 * rewritten to the real ids before the call goes on, and readlink answers
 * naming real pids are turned back. The status and stat files carry pids
 * and signal masks in their text: opened for reading they are served from
 * a memfd holding the kernel's text with virtual pids and without the
 * reserved signal (files.c saves such a descriptor by its /proc path, so
 * a restart reads the file again). Stack buffers only: these calls may
 * run in signal handlers and vfork children. What is left untranslated
 * is listed in docs/resources.md.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "wrappers.h"

/* The fortified entry points (-D_FORTIFY_SOURCE callers). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

DEFINE_NEXT(open);
DEFINE_NEXT(open64);
DEFINE_NEXT(__open_2);
DEFINE_NEXT(__open64_2);
DEFINE_NEXT(openat);
DEFINE_NEXT(openat64);
DEFINE_NEXT(__openat_2);
DEFINE_NEXT(__openat64_2);
DEFINE_NEXT(fopen);
DEFINE_NEXT(fopen64);
DEFINE_NEXT(freopen);
DEFINE_NEXT(freopen64);
DEFINE_NEXT(stat);
DEFINE_NEXT(stat64);
DEFINE_NEXT(lstat);
DEFINE_NEXT(lstat64);
DEFINE_NEXT(fstatat);
DEFINE_NEXT(fstatat64);
DEFINE_NEXT(statx);
DEFINE_NEXT(access);
DEFINE_NEXT(faccessat);
DEFINE_NEXT(readlink);
DEFINE_NEXT(readlinkat);
DEFINE_NEXT(opendir);
DEFINE_NEXT(chdir);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_proc_paths(void)
{
	RESOLVE_NEXT(open);
	RESOLVE_NEXT(open64);
	RESOLVE_NEXT(__open_2);
	RESOLVE_NEXT(__open64_2);
	RESOLVE_NEXT(openat);
	RESOLVE_NEXT(openat64);
	RESOLVE_NEXT(__openat_2);
	RESOLVE_NEXT(__openat64_2);
	RESOLVE_NEXT(fopen);
	RESOLVE_NEXT(fopen64);
	RESOLVE_NEXT(freopen);
	RESOLVE_NEXT(freopen64);
	RESOLVE_NEXT(stat);
	RESOLVE_NEXT(stat64);
	RESOLVE_NEXT(lstat);
	RESOLVE_NEXT(lstat64);
	RESOLVE_NEXT(fstatat);
	RESOLVE_NEXT(fstatat64);
	RESOLVE_NEXT(statx);
	RESOLVE_NEXT(access);
	RESOLVE_NEXT(faccessat);
	RESOLVE_NEXT(readlink);
	RESOLVE_NEXT(readlinkat);
	RESOLVE_NEXT(opendir);
	RESOLVE_NEXT(chdir);
}

/* ----- parsing /proc/<id>[/task/<id>]<rest> ----- */

struct proc_path {
	const char *head;	/* "self" or "thread-self"; NULL: a pid */
	pid_t pid, tid;		/* tid 0: no /task/<tid> part */
	const char *rest;	/* everything after the ids */
};

/* A pid as procfs names it: decimal, no leading zero, a whole component. */
static int parse_id(const char *s, pid_t *id, const char **end)
{
	long v = 0;
	int n = 0;

	if (*s < '1' || *s > '9')
		return 0;
	for (; s[n] >= '0' && s[n] <= '9' && n < 10; n++)
		v = v * 10 + (s[n] - '0');
	if ((s[n] && s[n] != '/') || v > INT_MAX)
		return 0;
	*id = (pid_t)v;
	*end = s + n;
	return 1;
}

static int is_component(const char *s, const char *name, const char **end)
{
	size_t n = strlen(name);

	if (strncmp(s, name, n) || (s[n] && s[n] != '/'))
		return 0;
	*end = s + n;
	return 1;
}

/* `prefix` is "/proc/" for paths, "" for what readlink("/proc/self")
 * answers ("<pid>" or "<pid>/task/<tid>"). 1 when path has the form. */
static int parse_proc_path(const char *path, const char *prefix,
			   struct proc_path *pp)
{
	const char *p = path, *end;
	size_t n = strlen(prefix);

	if (strncmp(p, prefix, n))
		return 0;
	p += n;
	memset(pp, 0, sizeof(*pp));
	if (is_component(p, "thread-self", &end)) {
		pp->head = "thread-self";
		pp->rest = end;
		return 1;
	}
	if (is_component(p, "self", &end))
		pp->head = "self";
	else if (!parse_id(p, &pp->pid, &end))
		return 0;
	pp->rest = end;
	if (!strncmp(end, "/task/", 6) && parse_id(end + 6, &pp->tid, &end))
		pp->rest = end;
	return 1;
}

/* The path with every id passed through `map`; 0 when nothing changed
 * or the result does not fit. */
static int format_proc_path(const struct proc_path *pp, const char *prefix,
			    pid_t (*map)(pid_t), char *buf, size_t len)
{
	pid_t pid = pp->pid ? map(pp->pid) : 0, tid = pp->tid ? map(pp->tid) : 0;
	char ids[64];
	int n;

	if (pid == pp->pid && tid == pp->tid)
		return 0;
	if (pp->head)
		n = snprintf(ids, sizeof(ids), "%s", pp->head);
	else
		n = snprintf(ids, sizeof(ids), "%d", (int)pid);
	if (tid)
		snprintf(ids + n, sizeof(ids) - n, "/task/%d", (int)tid);
	n = snprintf(buf, len, "%s%s%s", prefix, ids, pp->rest);
	return n > 0 && (size_t)n < len;
}

/* libc declares most path arguments nonnull, which would let the
 * compiler drop our NULL checks; libc itself answers EFAULT. */
static const char *unchecked(const char *path)
{
	__asm__("" : "+r"(path));
	return path;
}

/* The path the kernel must see for a path the program gave: its own
 * string unless it names a virtual pid that differs from the real one. */
static const char *real_path(const char *path, char buf[PATH_MAX])
{
	struct proc_path pp;

	path = unchecked(path);
	if (!path || !parse_proc_path(path, "/proc/", &pp) ||
	    !format_proc_path(&pp, "/proc/", vpid_real_from_virt, buf,
			      PATH_MAX))
		return path;
	return buf;
}

/* Relative paths are resolved against dirfd, which we do not follow. */
static const char *real_path_at(const char *path, char buf[PATH_MAX])
{
	path = unchecked(path);
	return path && path[0] == '/' ? real_path(path, buf) : path;
}

/* ----- readlink answers ----- */

#define SERVED_PREFIX "/memfd:ckpt-proc:"
#define SERVED_SUFFIX " (deleted)"

/* The /proc path behind one of our memfds, in place; 1 when it was one. */
static int served_origin(char *path)
{
	size_t n = strlen(path), p = strlen(SERVED_PREFIX),
	       s = strlen(SERVED_SUFFIX);

	if (n <= p + s || strncmp(path, SERVED_PREFIX, p) ||
	    strcmp(path + n - s, SERVED_SUFFIX))
		return 0;
	memmove(path, path + p, n - p - s);
	path[n - p - s] = 0;
	return 1;
}

static void to_virtual(char *path, size_t len, const char *prefix)
{
	char buf[PATH_MAX];
	struct proc_path pp;

	if (parse_proc_path(path, prefix, &pp) &&
	    format_proc_path(&pp, prefix, vpid_virt_from_real, buf,
			     sizeof(buf)) && strlen(buf) < len)
		strcpy(path, buf);
}

int proc_paths_saved_path(char *path, size_t len)
{
	if (served_origin(path))
		return 1;
	to_virtual(path, len, "/proc/");
	return 0;
}

static int names_self_link(const char *path)
{
	return !strcmp(path, "/proc/self") || !strcmp(path, "/proc/thread-self");
}

/* readlink's answer (n bytes in buf, no NUL) as the program must see it. */
static ssize_t virtual_link(const char *link, char *buf, size_t size,
			    ssize_t n)
{
	char text[PATH_MAX];

	if (n <= 0 || (size_t)n >= sizeof(text))
		return n;
	memcpy(text, buf, n);
	text[n] = 0;
	if (link && names_self_link(link))
		to_virtual(text, sizeof(text), "");
	else if (!served_origin(text))
		to_virtual(text, sizeof(text), "/proc/");
	n = strlen(text);
	if ((size_t)n > size)
		n = size;
	memcpy(buf, text, n);
	return n;
}

/* ----- status and stat served with virtual pids ----- */

enum proc_text { PROC_OTHER, PROC_STATUS, PROC_STAT };

static int proc_text_kind(const char *path, int flags)
{
	struct proc_path pp;

	path = unchecked(path);
	if ((flags & O_ACCMODE) != O_RDONLY ||
	    (flags & (O_PATH | O_DIRECTORY | O_CREAT | __O_TMPFILE)) ||
	    !path || !parse_proc_path(path, "/proc/", &pp))
		return PROC_OTHER;
	if (!strcmp(pp.rest, "/status"))
		return PROC_STATUS;
	if (!strcmp(pp.rest, "/stat"))
		return PROC_STAT;
	return PROC_OTHER;
}

static pid_t virtual_id(pid_t real)
{
	return real > 0 ? vpid_virt_from_real(real) : real;
}

/* No bit before libckpt's constructor has set the signal (a program's
 * constructor may read status first). */
static unsigned long long reserved_bit(void)
{
	return ckpt.signal > 0 && ckpt.signal <= 64 ?
	       1ULL << (ckpt.signal - 1) : 0;
}

static int has_field(const char *line, const char *name)
{
	return !strncmp(line, name, strlen(name));
}

static const char *const mask_fields[] = {
	"SigPnd:", "ShdPnd:", "SigBlk:", "SigIgn:", "SigCgt:",
};
static const char *const pid_fields[] = {
	"Pid:", "PPid:", "Tgid:", "TracerPid:",
	"NSpid:", "NStgid:", "NSpgid:", "NSsid:",
};

/* One line of status, rewritten into out; its length, or 0 to keep it.
 * Only the first id of the NS* lines is ours (the namespace of /proc). */
static int status_line(const char *line, char *out, size_t len)
{
	const char *colon = strchr(line, ':');
	char *end;
	int name = colon ? (int)(colon - line + 1) : 0;

	for (size_t i = 0; i < sizeof(mask_fields) / sizeof(*mask_fields); i++)
		if (has_field(line, mask_fields[i])) {
			unsigned long long m = strtoull(colon + 1, &end, 16);

			m &= ~reserved_bit();
			return snprintf(out, len, "%.*s\t%016llx%s", name,
					line, m, end);
		}
	for (size_t i = 0; i < sizeof(pid_fields) / sizeof(*pid_fields); i++)
		if (has_field(line, pid_fields[i])) {
			long id = strtol(colon + 1, &end, 10);

			id = has_field(line, "NSsid:") ?
			     session_virt_from_real(id) : virtual_id(id);
			return snprintf(out, len, "%.*s\t%d%s", name, line,
					(int)id, end);
		}
	return 0;
}

/* "pid (comm) state ppid pgrp session tty_nr tpgid ...": the ids. The
 * comm may hold spaces and parentheses: the fields start after the last
 * ')'. */
static int stat_line(const char *line, char *out, size_t len)
{
	const char *comm = strchr(line, '('), *p = strrchr(line, ')');
	size_t n;

	if (!comm || !p || p < comm)
		return 0;
	p++;
	n = snprintf(out, len, "%d %.*s", (int)virtual_id(atoi(line)),
		     (int)(p - comm), comm);
	for (int field = 3; *p == ' ' && n < len; field++) {
		const char *tok = p + 1;
		size_t toklen = strcspn(tok, " \n");

		if (field == 6)	/* the session, as getsid() says it */
			n += snprintf(out + n, len - n, " %d",
				      (int)session_virt_from_real(atoi(tok)));
		else if (field == 4 || field == 5 || field == 8)
			n += snprintf(out + n, len - n, " %d",
				      (int)virtual_id(atoi(tok)));
		else
			n += snprintf(out + n, len - n, " %.*s", (int)toklen,
				      tok);
		p = tok + toklen;
	}
	if (n < len)
		n += snprintf(out + n, len - n, "%s", p);
	return n < len ? (int)n : 0;
}

static int write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = syscall(SYS_write, fd, s, n);

		if (w <= 0)
			return -1;
		s += w;
		n -= w;
	}
	return 0;
}

static int put_line(int out, const char *line, int kind, int whole)
{
	char buf[2200];
	int n = 0;

	if (whole && kind == PROC_STATUS)
		n = status_line(line, buf, sizeof(buf));
	else if (whole && kind == PROC_STAT)
		n = stat_line(line, buf, sizeof(buf));
	if (n > 0 && (size_t)n < sizeof(buf))
		return write_all(out, buf, n);
	return write_all(out, line, strlen(line));
}

/* Copy the file in to out line by line; a line longer than the buffer
 * goes through as it is. */
static int copy_translated(int in, int out, int kind)
{
	char line[2048];
	size_t have = 0;
	int whole = 1;
	ssize_t n;
	char *nl;

	for (;;) {
		n = syscall(SYS_read, in, line + have, sizeof(line) - 1 - have);
		if (n < 0)
			return -1;
		have += n;
		line[have] = 0;
		while ((nl = strchr(line, '\n'))) {
			char c = nl[1];

			nl[1] = 0;
			if (put_line(out, line, kind, whole) < 0)
				return -1;
			nl[1] = c;
			whole = 1;
			have -= nl + 1 - line;
			memmove(line, nl + 1, have + 1);
		}
		if (n == 0 || have == sizeof(line) - 1) {
			if (have && put_line(out, line, kind, whole && n == 0))
				return -1;
			if (n == 0)
				return 0;
			whole = 0;
			have = 0;
		}
	}
}

/* A memfd named after the program's path holding the translated text;
 * -1 with errno set when the file cannot be read. */
static int make_translated_copy(const char *path, int kind,
				char buf[PATH_MAX])
{
	char name[256];
	int in, memfd, r;

	if (snprintf(name, sizeof(name), "ckpt-proc:%s", path) >=
	    (int)sizeof(name) - 20) {	/* memfd names: 249 bytes */
		errno = ENAMETOOLONG;
		return -1;
	}
	in = syscall(SYS_openat, AT_FDCWD, real_path(path, buf),
		     O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	memfd = syscall(SYS_memfd_create, name, MFD_CLOEXEC);
	if (memfd < 0) {
		r = errno;
		syscall(SYS_close, in);
		errno = r;
		return -1;
	}
	r = copy_translated(in, memfd, kind);
	r = r < 0 ? errno : 0;
	syscall(SYS_close, in);
	if (r) {
		syscall(SYS_close, memfd);
		errno = r;
		return -1;
	}
	return memfd;
}

/* The translated copy for a status or stat file opened for reading:
 * its memfd, and in `copy` a path the caller's own open function reaches
 * it by (a new open file description, read-only at offset 0 like the
 * file). -1 for every other path, and when the file cannot be copied:
 * the caller then opens the file itself. Made without checkpoints: one
 * falling in the middle would restart the copy with both of its files
 * opened again as they were saved (the memfd read-only), the copy would
 * fail and the program would read the kernel's file with the real pids. */
static int served_copy(const char *path, int flags, char copy[64],
		       char buf[PATH_MAX])
{
	int kind = proc_text_kind(path, flags), memfd;

	if (kind == PROC_OTHER)
		return -1;
	memfd = WITHOUT_CHECKPOINT(make_translated_copy(path, kind, buf));
	if (memfd >= 0)
		snprintf(copy, 64, "/proc/self/fd/%d", memfd);
	return memfd;
}

/* Once the caller holds its own descriptor of the copy. */
static void drop_copy(int memfd)
{
	int e = errno;

	syscall(SYS_close, memfd);
	errno = e;
}

static mode_t open_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ?
	       (mode_t)va_arg(ap, int) : 0;
}

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

/* open when next is set, else openat (with an absolute path openat
 * ignores dirfd: the same as open). The copy is a symbolic link away:
 * O_NOFOLLOW would refuse it. */
static int open_translated(int dirfd, const char *path, int flags,
			   mode_t mode, open_fn next, openat_fn next_at)
{
	char buf[PATH_MAX], copy[64];
	int memfd = served_copy(path, flags, copy, buf), fd;

	if (memfd < 0) {
		path = real_path_at(path, buf);
		fd = next ? next(path, flags, mode) :
			    next_at(dirfd, path, flags, mode);
		if (fd >= 0 && (flags & (O_CREAT | O_EXCL)) ==
			       (O_CREAT | O_EXCL))
			created_files_note(fd);
		return fd;
	}
	flags &= ~O_NOFOLLOW;
	fd = next ? next(copy, flags) : next_at(AT_FDCWD, copy, flags);
	drop_copy(memfd);
	return fd;
}

/* The parameters before flags, then the call with the mode read. */
#define OPEN_WRAPPER(name, call, ...)                                     \
	CKPT_WRAPPER int name(__VA_ARGS__, int flags, ...)                 \
	{                                                                  \
		va_list ap;                                                \
		mode_t mode;                                               \
									   \
		va_start(ap, flags);                                       \
		mode = open_mode(flags, ap);                               \
		va_end(ap);                                                \
		return call;                                               \
	}

OPEN_WRAPPER(open, open_translated(AT_FDCWD, path, flags, mode,
				   NEXT_FN(open), NULL), const char *path)
OPEN_WRAPPER(open64, open_translated(AT_FDCWD, path, flags, mode,
				     NEXT_FN(open64), NULL), const char *path)
OPEN_WRAPPER(openat, open_translated(dirfd, path, flags, mode, NULL,
				     NEXT_FN(openat)),
	     int dirfd, const char *path)
OPEN_WRAPPER(openat64, open_translated(dirfd, path, flags, mode, NULL,
				       NEXT_FN(openat64)),
	     int dirfd, const char *path)

/* The fortified calls never create a file (no mode): open with the
 * same flags. */
CKPT_WRAPPER int __open_2(const char *path, int flags)
{
	return open(path, flags);
}

CKPT_WRAPPER int __open64_2(const char *path, int flags)
{
	return open64(path, flags);
}

CKPT_WRAPPER int __openat_2(int dirfd, const char *path, int flags)
{
	return openat(dirfd, path, flags);
}

CKPT_WRAPPER int __openat64_2(int dirfd, const char *path, int flags)
{
	return openat64(dirfd, path, flags);
}

/* fopen's flags: only plain reading ("r", "re", "rb", ...) is served a
 * copy. */
static int fopen_flags(const char *mode)
{
	if (!mode || mode[0] != 'r' || strchr(mode, '+'))
		return O_RDWR;
	return O_RDONLY;
}

/* fopen when next is set, else freopen of stream. */
static FILE *fopen_translated(const char *path, const char *mode,
			      FILE *(*next)(const char *, const char *),
			      FILE *(*reopen)(const char *, const char *,
					      FILE *),
			      FILE *stream)
{
	char buf[PATH_MAX], copy[64];
	int memfd = served_copy(path, fopen_flags(mode), copy, buf);
	FILE *f;

	path = memfd >= 0 ? copy : real_path(path, buf);
	f = next ? next(path, mode) : reopen(path, mode, stream);
	if (memfd >= 0)
		drop_copy(memfd);
	else if (f && mode && strchr(mode, 'x'))	/* O_CREAT|O_EXCL */
		created_files_note(fileno(f));
	return f;
}

CKPT_WRAPPER FILE *fopen(const char *path, const char *mode)
{
	return fopen_translated(path, mode, NEXT_FN(fopen), NULL, NULL);
}

CKPT_WRAPPER FILE *fopen64(const char *path, const char *mode)
{
	return fopen_translated(path, mode, NEXT_FN(fopen64), NULL, NULL);
}

CKPT_WRAPPER FILE *freopen(const char *path, const char *mode, FILE *stream)
{
	return fopen_translated(path, mode, NULL, NEXT_FN(freopen), stream);
}

CKPT_WRAPPER FILE *freopen64(const char *path, const char *mode,
			     FILE *stream)
{
	return fopen_translated(path, mode, NULL, NEXT_FN(freopen64), stream);
}

/* ----- calls that only need the path rewritten ----- */

#define PATH_WRAPPER(name, argtype)                                        \
	CKPT_WRAPPER int name(const char *path, argtype arg)               \
	{                                                                  \
		char buf[PATH_MAX];                                        \
									   \
		return NEXT_FN(name)(real_path(path, buf), arg);           \
	}

PATH_WRAPPER(stat, struct stat *)
PATH_WRAPPER(stat64, struct stat64 *)
PATH_WRAPPER(lstat, struct stat *)
PATH_WRAPPER(lstat64, struct stat64 *)
PATH_WRAPPER(access, int)

#define FSTATAT_WRAPPER(name, stattype)                                   \
	CKPT_WRAPPER int name(int dirfd, const char *path, stattype *st,   \
			      int flags)                                   \
	{                                                                  \
		char buf[PATH_MAX];                                        \
									   \
		return NEXT_FN(name)(dirfd, real_path_at(path, buf), st,   \
				     flags);                               \
	}

FSTATAT_WRAPPER(fstatat, struct stat)
FSTATAT_WRAPPER(fstatat64, struct stat64)

CKPT_WRAPPER int statx(int dirfd, const char *path, int flags,
		       unsigned int mask, struct statx *stx)
{
	char buf[PATH_MAX];

	return NEXT_FN(statx)(dirfd, real_path_at(path, buf), flags, mask,
			      stx);
}

CKPT_WRAPPER int faccessat(int dirfd, const char *path, int mode, int flags)
{
	char buf[PATH_MAX];

	return NEXT_FN(faccessat)(dirfd, real_path_at(path, buf), mode, flags);
}

CKPT_WRAPPER DIR *opendir(const char *path)
{
	char buf[PATH_MAX];

	return NEXT_FN(opendir)(real_path(path, buf));
}

CKPT_WRAPPER int chdir(const char *path)
{
	char buf[PATH_MAX];

	return NEXT_FN(chdir)(real_path(path, buf));
}

CKPT_WRAPPER ssize_t readlink(const char *path, char *out, size_t size)
{
	char buf[PATH_MAX];
	ssize_t n = NEXT_FN(readlink)(real_path(path, buf), out, size);

	return virtual_link(path, out, size, n);
}

CKPT_WRAPPER ssize_t readlinkat(int dirfd, const char *path, char *out,
				size_t size)
{
	char buf[PATH_MAX];
	ssize_t n = NEXT_FN(readlinkat)(dirfd, real_path_at(path, buf), out,
					size);

	return virtual_link(path[0] == '/' ? path : NULL, out, size, n);
}
