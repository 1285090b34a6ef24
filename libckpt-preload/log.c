/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Messages, raw ids and the bookkeeping of libckpt's own descriptors. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

#define OWN_FD_BITS 4096
#define OWN_FD_BASE 800		/* libckpt's descriptors live up here */

static unsigned long own_fds[OWN_FD_BITS / (8 * sizeof(unsigned long))];

/* Where messages go: stderr, or during a restart the stderr of
 * ckpt_restart (the program's own stderr may be a file of the old run). */
int ckpt_log_fd = STDERR_FILENO;

/* vsnprintf on a stack buffer takes no lock and does not allocate for
 * the plain conversions used here. */
void ckpt_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

void ckpt_log(const char *fmt, ...)
{
	char buf[1024];
	int n, saved = errno;
	va_list ap;

	n = snprintf(buf, sizeof(buf), "ckpt[%d]: ", (int)ckpt.vpid);
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(buf);
	buf[n++] = '\n';
	if (write(ckpt_log_fd, buf, n) < 0) {
		/* nowhere left to report to */
	}
	errno = saved;
}

pid_t ckpt_real_getpid(void)
{
	return syscall(SYS_getpid);
}

pid_t ckpt_real_gettid(void)
{
	return syscall(SYS_gettid);
}

int ckpt_is_own_fd(int fd)
{
	if (fd < 0 || fd >= OWN_FD_BITS)
		return 0;
	return !!(own_fds[fd / (8 * sizeof(long))] &
		  (1UL << (fd % (8 * sizeof(long)))));
}

void ckpt_mark_own_fd(int fd, int own)
{
	unsigned long bit;

	if (fd < 0 || fd >= OWN_FD_BITS)
		return;
	bit = 1UL << (fd % (8 * sizeof(long)));
	if (own)
		own_fds[fd / (8 * sizeof(long))] |= bit;
	else
		own_fds[fd / (8 * sizeof(long))] &= ~bit;
}

/* The lowest of libckpt's descriptors at from or above, or -1. */
int ckpt_next_own_fd(int from)
{
	const int per_word = 8 * sizeof(unsigned long);

	for (int fd = from < 0 ? 0 : from; fd < OWN_FD_BITS; fd++) {
		unsigned long word = own_fds[fd / per_word] >> (fd % per_word);

		if (!word) {
			fd = (fd / per_word + 1) * per_word - 1;
			continue;
		}
		return fd + __builtin_ctzl(word);
	}
	return -1;
}

/* Move one of libckpt's descriptors above the range programs use, mark
 * it close-on-exec and as ours (skipped by the checkpoint, and a close
 * by the program refuses it: wrappers/close.c). One up there already
 * stays where it is. */
int ckpt_move_fd_high(int fd)
{
	int nfd;

	if (fd >= OWN_FD_BASE && fcntl(fd, F_SETFD, FD_CLOEXEC) == 0) {
		ckpt_mark_own_fd(fd, 1);
		return fd;
	}
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, OWN_FD_BASE);
	if (nfd < 0)
		nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (nfd < 0) {
		ckpt_mark_own_fd(fd, 1);
		return fd;
	}
	ckpt_mark_own_fd(fd, 0);
	close(fd);
	ckpt_mark_own_fd(nfd, 1);
	return nfd;
}

/* After a restart none of libckpt's old descriptors exist any more. */
void ckpt_forget_own_fds(void)
{
	memset(own_fds, 0, sizeof(own_fds));
}

long ckpt_syscall_error(long err)
{
	errno = (int)err;
	return -1;
}

/* libckpt's own opens name real ids (/proc/self/task/<real tid>): past
 * the program's path translation (wrappers/proc_paths.c). */
int ckpt_open_raw(const char *path, int flags)
{
	return syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC);
}

/* Read a small file (a /proc entry) into buf as a NUL-terminated string;
 * returns its length or -errno. */
int ckpt_read_small_file(const char *path, char *buf, size_t len)
{
	int fd = ckpt_open_raw(path, O_RDONLY), n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return n;
}

int ckpt_dir_open(struct ckpt_dir_iter *it, const char *path)
{
	it->pos = it->len = 0;
	it->fd = ckpt_open_raw(path, O_RDONLY | O_DIRECTORY);
	return it->fd < 0 ? -errno : 0;
}

const struct dirent64 *ckpt_dir_next_entry(struct ckpt_dir_iter *it)
{
	struct dirent64 *d;

	if (it->pos >= it->len) {
		it->len = syscall(SYS_getdents64, it->fd, it->buf,
				  sizeof(it->buf));
		it->pos = 0;
		if (it->len <= 0)
			return NULL;
	}
	d = (struct dirent64 *)(it->buf + it->pos);
	it->pos += d->d_reclen;
	return d;
}

int ckpt_dir_next_number(struct ckpt_dir_iter *it)
{
	const struct dirent64 *d;

	while ((d = ckpt_dir_next_entry(it)))
		if (d->d_name[0] >= '0' && d->d_name[0] <= '9')
			return atoi(d->d_name);
	return -1;
}

void ckpt_dir_close(struct ckpt_dir_iter *it)
{
	if (it->fd >= 0)
		close(it->fd);
	it->fd = -1;
}
