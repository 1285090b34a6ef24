/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sender's pid in a signal read from a signalfd (ssi_pid) is the
 * kernel's; after a restart the program knows its peers by their virtual
 * pids (vpid/vpid.c), as SA_SIGINFO handlers and sigwaitinfo show them
 * (wrappers/signal.c). The signalfd wrapper and the restore of a signalfd
 * (event_fds.c) mark its number; a read of a marked number that is still
 * a signalfd (its /proc/self/fd link, looked at only for marked numbers)
 * has each record's pid translated. Reads of every other fd pay one bit
 * test. A signalfd reached through a number made by dup, or inherited
 * across exec, is not marked (docs/resources.md, Event fds).
 */
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "wrappers.h"

ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen);

DEFINE_NEXT(read);
DEFINE_NEXT(__read_chk);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_read(void)
{
	RESOLVE_NEXT(read);
	RESOLVE_NEXT(__read_chk);
}

#define MARKED_MAX CKPT_MAX_FDS
static uint64_t marked[MARKED_MAX / 64];

static int is_marked(int fd)
{
	return fd >= 0 && fd < MARKED_MAX &&
	       (__atomic_load_n(&marked[fd / 64], __ATOMIC_RELAXED) >>
		(fd % 64) & 1);
}

static void set_mark(int fd, int on)
{
	uint64_t bit = 1ULL << (fd % 64);

	if (on)
		__atomic_fetch_or(&marked[fd / 64], bit, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&marked[fd / 64], ~bit, __ATOMIC_RELAXED);
}

void signalfd_reads_note(int fd)
{
	if (fd >= 0 && fd < MARKED_MAX)
		set_mark(fd, 1);
}

static int still_a_signalfd(int fd)
{
	static const char want[] = "anon_inode:[signalfd]";
	char proc[64], link[sizeof(want)];
	ssize_t n;

	ckpt_fmt(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, link, sizeof(link));
	return n == (ssize_t)sizeof(want) - 1 && !memcmp(link, want, n);
}

static void translate_senders(int fd, void *buf, ssize_t n, unsigned then)
{
	struct signalfd_siginfo si;
	int e = errno;

	if (n % sizeof(si))
		return;
	if (!still_a_signalfd(fd)) {
		set_mark(fd, 0);	/* closed, the number reused */
		errno = e;
		return;
	}
	for (char *p = buf; p < (char *)buf + n; p += sizeof(si)) {
		memcpy(&si, p, sizeof(si));
		if (si.ssi_pid > 0 &&
		    signal_names_a_sender(si.ssi_signo, si.ssi_code)) {
			si.ssi_pid = vpid_virt_from_real_since(si.ssi_pid, then);
			memcpy(p, &si, sizeof(si));
		}
	}
	errno = e;
}

CKPT_WRAPPER ssize_t read(int fd, void *buf, size_t count)
{
	unsigned then = vpid_epoch();
	ssize_t n;

	if (record_inputs_wants_read(fd))
		return record_inputs_read(fd, buf, count, NEXT_FN(read));
	n = NEXT_FN(read)(fd, buf, count);

	if (n > 0 && is_marked(fd))
		translate_senders(fd, buf, n, then);
	return n;
}

CKPT_WRAPPER ssize_t __read_chk(int fd, void *buf, size_t count,
				size_t buflen)
{
	unsigned then = vpid_epoch();
	ssize_t n;

	if (record_inputs_wants_read(fd))
		return record_inputs_read(fd, buf, count, NEXT_FN(read));
	n = NEXT_FN(__read_chk)(fd, buf, count, buflen);

	if (n > 0 && is_marked(fd))
		translate_senders(fd, buf, n, then);
	return n;
}
