/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Event fds: eventfd, timerfd, signalfd and epoll (files.c records them
 * as CKPT_FD_EVENTFD ... CKPT_FD_EPOLL; this file holds what is special
 * about them, one ops entry per kind; inotify's is in inotify.c, pidfd's
 * in pidfds.c).
 * docs/resources.md tells the story:
 *
 *   checkpoint (threads stopped): each one's state is read from
 *   /proc/self/fdinfo/N, which takes nothing out of it (an eventfd's
 *   counter, a timerfd's pending expirations, an epoll's interest list),
 *   and kept in the tables below, which are part of the saved memory.
 *   Once every fd is known, each epoll target is checked: still the file
 *   registered (kcmp KCMP_EPOLL_TFD) and of a kind a restart brings back;
 *   if not, the checkpoint says so (unrestored.c).
 *
 *   restart, inside the restarted process (files.c's restore): each is
 *   made again at its number with its state; the epoll instances after
 *   every other fd, their targets re-added by number. An eventfd, timerfd
 *   or epoll several processes shared is made empty once by ckpt_restart
 *   (restart/restart_files.c); one holder puts the state in
 *   (event_fds_apply), the others wait for it (files.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS	_IOW('T', 0, uint64_t)
#endif

#define EVENT_FDS_MAX		1024
#define EPOLL_TARGETS_MAX	16384
#define NSEC			1000000000LL

struct timerfd_state {
	int clockid;
	unsigned settime_flags;		/* TFD_TIMER_* */
	uint64_t ticks;			/* expirations not yet read */
	struct itimerspec its;		/* time left, period */
	int64_t realtime_ns;		/* CLOCK_REALTIME when saved */
};

struct epoll_target {
	int fd;
	uint32_t events;
	uint64_t data;
	int dropped;			/* said unrestored when saved */
};

struct event_fd {
	int fd;
	int kind;			/* CKPT_FD_EVENTFD ... CKPT_FD_EPOLL */
	union {
		struct {
			uint64_t count;
			int semaphore;
		} eventfd;
		struct timerfd_state timerfd;
		uint64_t sigmask;
		struct {
			uint32_t first, n;	/* in targets[] */
		} epoll;
	};
};

static struct event_fd events[EVENT_FDS_MAX];
static int nevents;
static struct epoll_target targets[EPOLL_TARGETS_MAX];
static uint32_t ntargets;

/* ----- reading /proc/self/fdinfo/N ----- */

/* 1 and *v when line is "NAME<spaces>NUMBER" in base `base`. */
static int field(const char *line, const char *name, int base, uint64_t *v)
{
	size_t len = strlen(name);

	if (strncmp(line, name, len))
		return 0;
	*v = strtoull(line + len, NULL, base);
	return 1;
}

/* "NAME (SEC, NSEC)" */
static int time_field(const char *line, const char *name, struct timespec *t)
{
	size_t len = strlen(name);
	const char *p = line + len;
	char *end;

	if (strncmp(line, name, len))
		return 0;
	while (*p == ' ' || *p == '\t' || *p == '(')
		p++;
	t->tv_sec = strtoll(p, &end, 10);
	p = end;
	while (*p == ',' || *p == ' ')
		p++;
	t->tv_nsec = strtoll(p, NULL, 10);
	return 1;
}

typedef int (*line_fn)(struct event_fd *e, const char *line);

/* fn on each line of fd's fdinfo; an epoll's may be long: read in
 * pieces, no malloc. */
static int each_fdinfo_line(struct event_fd *e, line_fn fn)
{
	char path[64], buf[4096];
	size_t have = 0;
	int f, r = 0;

	ckpt_fmt(path, sizeof(path), "/proc/self/fdinfo/%d", e->fd);
	f = ckpt_open_raw(path, O_RDONLY);
	if (f < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(f, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;

		if (n < 0) {
			r = -errno;
			break;
		}
		have += n;
		buf[have] = 0;
		while (r == 0 && (nl = strchr(line, '\n'))) {
			*nl = 0;
			r = fn(e, line);
			line = nl + 1;
		}
		if (r < 0 || n == 0) {
			if (r == 0 && *line)
				r = fn(e, line);
			break;
		}
		have -= line - buf;
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1) {
			r = -EOVERFLOW;	/* a line longer than buf */
			break;
		}
	}
	close(f);
	return r;
}

/* ----- eventfd ----- */

static int eventfd_line(struct event_fd *e, const char *line)
{
	uint64_t v;

	if (field(line, "eventfd-count:", 16, &v))
		e->eventfd.count = v;
	else if (field(line, "eventfd-semaphore:", 10, &v))
		e->eventfd.semaphore = v != 0;
	return 0;
}

static int eventfd_save(struct event_fd *e)
{
	return each_fdinfo_line(e, eventfd_line);
}

/* The counter is put back by a write: eventfd2 takes only 32 bits. */
static int eventfd_apply(const struct event_fd *e, int fd)
{
	uint64_t count = e->eventfd.count;

	if (count && write(fd, &count, sizeof(count)) != sizeof(count))
		return -errno;
	return 0;
}

static int eventfd_restore(const struct event_fd *e)
{
	int flags = EFD_CLOEXEC | (e->eventfd.semaphore ? EFD_SEMAPHORE : 0);
	int fd = syscall(SYS_eventfd2, 0, flags);

	return fd < 0 ? -errno : fd;
}

/* ----- timerfd ----- */

static int timerfd_line(struct event_fd *e, const char *line)
{
	struct timerfd_state *t = &e->timerfd;
	uint64_t v;

	if (field(line, "clockid:", 10, &v))
		t->clockid = (int)v;
	else if (field(line, "ticks:", 10, &v))
		t->ticks = v;
	else if (field(line, "settime flags:", 8, &v))
		t->settime_flags = (unsigned)v;
	else if (!time_field(line, "it_value:", &t->its.it_value))
		time_field(line, "it_interval:", &t->its.it_interval);
	return 0;
}

static int is_zero(const struct timespec *t)
{
	return t->tv_sec == 0 && t->tv_nsec == 0;
}

static int64_t ns_of(const struct timespec *t)
{
	return t->tv_sec * NSEC + t->tv_nsec;
}

static struct timespec timespec_of(int64_t ns)
{
	return (struct timespec){ ns / NSEC, ns % NSEC };
}

/* The kernel counts a periodic timer's missed periods only when it is
 * read or asked (timerfd_gettime): asking first makes fdinfo's ticks
 * all of them, without taking any out. */
static int timerfd_save(struct event_fd *e)
{
	struct timerfd_state *t = &e->timerfd;
	struct itimerspec cur;
	struct timespec now;
	int r;

	if (syscall(SYS_timerfd_gettime, e->fd, &cur) < 0)
		return -errno;
	clock_gettime(CLOCK_REALTIME, &now);
	t->realtime_ns = ns_of(&now);
	r = each_fdinfo_line(e, timerfd_line);
	/* it expired again between the two: the next one is a period on */
	if (r == 0 && is_zero(&t->its.it_value))
		t->its.it_value = t->its.it_interval;
	return r;
}

static int is_realtime(int clockid)
{
	return clockid == CLOCK_REALTIME || clockid == CLOCK_REALTIME_ALARM;
}

/*
 * A CLOCK_REALTIME TFD_TIMER_ABSTIME timer keeps its absolute deadline.
 * If that passed while the program was not running, it fires once at
 * once (one more expiration) and its period goes on from there: missed
 * periods are not counted.
 */
static void realtime_deadline(const struct timerfd_state *t,
			      struct itimerspec *its, uint64_t *extra)
{
	int64_t at = t->realtime_ns + ns_of(&t->its.it_value), period;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	period = ns_of(&t->its.it_interval);
	if (at <= ns_of(&now) && period > 0) {
		at += ((ns_of(&now) - at) / period + 1) * period;
		*extra = 1;
	}
	its->it_value = timespec_of(at);
}

/* Other clocks (MONOTONIC, BOOTTIME, relative REALTIME) go on with the
 * time that was left: the time the program was stopped does not count. */
static int timerfd_apply(const struct event_fd *e, int fd)
{
	const struct timerfd_state *t = &e->timerfd;
	struct itimerspec its = t->its;
	uint64_t ticks, extra = 0;
	int flags = 0;

	if (is_realtime(t->clockid) && (t->settime_flags & TFD_TIMER_ABSTIME)
	    && !is_zero(&its.it_value)) {
		realtime_deadline(t, &its, &extra);
		flags = t->settime_flags;
	}
	if (!is_zero(&its.it_value) &&
	    syscall(SYS_timerfd_settime, fd, flags, &its, NULL) < 0)
		return -errno;
	ticks = t->ticks + extra;
	if (ticks && ioctl(fd, TFD_IOC_SET_TICKS, &ticks) < 0)
		ckpt_log("fd %d (timerfd): cannot put back its %llu expirations"
			 " not yet read: TFD_IOC_SET_TICKS: %s (a kernel "
			 "without CONFIG_CHECKPOINT_RESTORE?)", e->fd,
			 (unsigned long long)ticks, strerror(errno));
	return 0;
}

static int timerfd_restore(const struct event_fd *e)
{
	int fd = syscall(SYS_timerfd_create, e->timerfd.clockid, TFD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* ----- signalfd ----- */

static int signalfd_line(struct event_fd *e, const char *line)
{
	field(line, "sigmask:", 16, &e->sigmask);
	return 0;
}

static int signalfd_save(struct event_fd *e)
{
	return each_fdinfo_line(e, signalfd_line);
}

/* Raw signalfd4: the wrapper's (wrappers/signal.c) is for the program.
 * Pending signals it would read are queued again by pending_signals.c. */
static int signalfd_restore(const struct event_fd *e)
{
	uint64_t mask = e->sigmask;
	int fd;

	if (ckpt.signal > 0)
		mask &= ~(1ULL << (ckpt.signal - 1));
	fd = syscall(SYS_signalfd4, -1, &mask, sizeof(mask), SFD_CLOEXEC);
	if (fd >= 0)
		signalfd_reads_note(e->fd);	/* where files.c puts it */
	return fd < 0 ? -errno : fd;
}

/* ----- epoll ----- */

static int epoll_line(struct event_fd *e, const char *line)
{
	struct epoll_target *t;
	const char *p;

	if (strncmp(line, "tfd:", 4))
		return 0;
	if (ntargets == EPOLL_TARGETS_MAX)
		return -E2BIG;
	t = &targets[ntargets];
	memset(t, 0, sizeof(*t));
	t->fd = (int)strtol(line + 4, NULL, 10);
	p = strstr(line, "events:");
	if (p)
		t->events = (uint32_t)strtoul(p + 7, NULL, 16);
	p = strstr(line, "data:");
	if (p)
		t->data = strtoull(p + 5, NULL, 16);
	if (!strstr(line, "events:") || !p)
		return -EPROTO;
	ntargets++;
	e->epoll.n++;
	return 0;
}

static int epoll_save(struct event_fd *e)
{
	e->epoll.first = ntargets;
	e->epoll.n = 0;
	return each_fdinfo_line(e, epoll_line);
}

/* Made empty: the interest list comes once every fd exists
 * (event_fds_restore_interest). */
static int epoll_restore(const struct event_fd *e)
{
	int fd = epoll_create1(EPOLL_CLOEXEC);

	(void)e;
	return fd < 0 ? -errno : fd;
}

/* ----- inotify (inotify.c) ----- */

static int inotify_fd_save(struct event_fd *e)
{
	return inotify_save(e->fd);
}

static int inotify_fd_restore(const struct event_fd *e)
{
	return inotify_restore(e->fd);
}

/* ----- pidfd (pidfds.c) ----- */

static int pidfd_save(struct event_fd *e)
{
	return pidfds_save(e->fd);
}

static int pidfd_restore(const struct event_fd *e)
{
	return pidfds_restore(e->fd);
}

/* ----- the kinds ----- */

static const struct event_fd_ops {
	const char *link;		/* its /proc/self/fd link */
	const char *name;		/* what it is, for messages */
	int kind;
	int (*save)(struct event_fd *e);
	/* new fd, with the state unless apply puts it in; or -errno */
	int (*restore)(const struct event_fd *e);
	/* the saved state into fd, made empty by restore or by
	 * ckpt_restart (a description shared between processes) */
	int (*apply)(const struct event_fd *e, int fd);
} kinds[] = {
	{ "anon_inode:[eventfd]", "an eventfd", CKPT_FD_EVENTFD,
	  eventfd_save, eventfd_restore, eventfd_apply },
	{ "anon_inode:[timerfd]", "a timerfd", CKPT_FD_TIMERFD,
	  timerfd_save, timerfd_restore, timerfd_apply },
	{ "anon_inode:[signalfd]", "a signalfd", CKPT_FD_SIGNALFD,
	  signalfd_save, signalfd_restore, NULL },
	{ "anon_inode:[eventpoll]", "an epoll instance", CKPT_FD_EPOLL,
	  epoll_save, epoll_restore, NULL },
	{ "anon_inode:inotify", "an inotify instance", CKPT_FD_INOTIFY,
	  inotify_fd_save, inotify_fd_restore, NULL },
	{ "anon_inode:[pidfd]", "a pidfd", CKPT_FD_PIDFD, pidfd_save,
	  pidfd_restore, NULL },
};

static const struct event_fd_ops *ops_of(int kind)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].kind == kind)
			return &kinds[i];
	return NULL;
}

static struct event_fd *find(int fd)
{
	for (int i = 0; i < nevents; i++)
		if (events[i].fd == fd)
			return &events[i];
	return NULL;
}

/* The CKPT_FD_* kind of an fd with this /proc/self/fd link, or 0. */
int event_fds_kind(const char *link)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(link, kinds[i].link))
			return kinds[i].kind;
	return 0;
}

const char *event_fds_name(int kind)
{
	const struct event_fd_ops *ops = ops_of(kind);

	return ops ? ops->name : "an event fd";
}

void event_fds_begin(void)
{
	nevents = 0;
	ntargets = 0;
	inotify_begin();
	pidfds_begin();
}

/* Read the state of fd, an event fd of `kind`. 0 or -errno. */
int event_fds_save(int fd, int kind)
{
	const struct event_fd_ops *ops = ops_of(kind);
	struct event_fd *e = &events[nevents];
	uint32_t had = ntargets;
	int r;

	if (!ops)
		return -EINVAL;
	if (nevents == EVENT_FDS_MAX)
		return -E2BIG;
	memset(e, 0, sizeof(*e));
	e->fd = fd;
	e->kind = kind;
	r = ops->save(e);
	if (r < 0) {
		ntargets = had;
		return r;
	}
	nevents++;
	return 0;
}

/* Why target t of epoll fd epfd would not come back, or NULL. */
static const char *target_problem(pid_t pid, int epfd,
				  const struct epoll_target *t,
				  int (*saved_kind)(int fd))
{
	struct kcmp_epoll_slot slot = { epfd, t->fd, 0 };
	long same = syscall(SYS_kcmp, pid, pid, KCMP_EPOLL_TFD, t->fd, &slot);
	int kind;

	if (same < 0 && errno == EBADF)
		return "that fd is closed, the file registered stays open "
		       "at another";
	if (same > 0)
		return "that fd holds another file than the one registered";
	/* (kcmp unavailable: the fd number is trusted) */
	kind = saved_kind(t->fd);
	if (kind == 0)
		return "that fd is not saved";
	if (kind == CKPT_FD_UNSUPPORTED)
		return "that fd is not restored";
	return NULL;
}

/* Once every fd is saved: the epoll targets a restart cannot re-add are
 * said, one line each; saved_kind(fd) is fd's saved kind, 0 if none. */
void event_fds_check_interest(pid_t pid, int (*saved_kind)(int fd))
{
	for (int i = 0; i < nevents; i++) {
		const struct event_fd *e = &events[i];

		if (e->kind != CKPT_FD_EPOLL)
			continue;
		for (uint32_t j = 0; j < e->epoll.n; j++) {
			struct epoll_target *t = &targets[e->epoll.first + j];
			const char *why = target_problem(pid, e->fd, t,
							 saved_kind);

			t->dropped = why != NULL;
			if (why)
				unrestored_add("fd %d: an epoll instance: its "
					       "entry for fd %d (events %#x, "
					       "data %#llx): %s; a restart "
					       "leaves the entry out", e->fd,
					       t->fd, t->events,
					       (unsigned long long)t->data,
					       why);
		}
	}
}

/* Whether a target of an epoll read again was dropped: as it was when
 * the same fd was in the list saved first, else checked now. */
static int target_dropped(const struct event_fd *e, uint32_t old_first,
			  uint32_t old_n, struct epoll_target *t, pid_t pid,
			  int (*saved_kind)(int fd))
{
	const char *why;

	for (uint32_t j = 0; j < old_n; j++)
		if (targets[old_first + j].fd == t->fd)
			return targets[old_first + j].dropped;
	why = target_problem(pid, e->fd, t, saved_kind);
	if (why)
		unrestored_add("fd %d: an epoll instance: its entry for fd %d "
			       "(events %#x, data %#llx): %s; a restart leaves "
			       "the entry out", e->fd, t->fd, t->events,
			       (unsigned long long)t->data, why);
	return why != NULL;
}

/* An epoll's interest list read again. Put where the first reading was
 * when it is as long, else after the others (the first is left unused). */
static int epoll_refresh(struct event_fd *e, pid_t pid,
			 int (*saved_kind)(int fd))
{
	uint32_t old_first = e->epoll.first, old_n = e->epoll.n;
	uint32_t had = ntargets;
	int r = epoll_save(e);

	if (r < 0) {
		ntargets = had;
		e->epoll.first = old_first;
		e->epoll.n = old_n;
		return r;
	}
	for (uint32_t j = 0; j < e->epoll.n; j++) {
		struct epoll_target *t = &targets[e->epoll.first + j];

		t->dropped = target_dropped(e, old_first, old_n, t, pid,
					    saved_kind);
	}
	if (e->epoll.n == old_n) {
		memmove(&targets[old_first], &targets[e->epoll.first],
			old_n * sizeof(targets[0]));
		e->epoll.first = old_first;
		ntargets = had;
	}
	return 0;
}

/* Read the state of event fd `fd` again once every process of the
 * checkpoint is stopped (files.c's drain): another process holding the
 * same description may have changed it after this one stopped (written
 * an eventfd, armed a timerfd, changed an epoll entry), and the image must
 * hold the state of that one moment. 0 or -errno (the first reading
 * stays). */
int event_fds_refresh(int fd, pid_t pid, int (*saved_kind)(int fd))
{
	struct event_fd *e = find(fd), copy;
	const struct event_fd_ops *ops;
	int r;

	if (!e)
		return 0;
	if (e->kind == CKPT_FD_EPOLL)
		return epoll_refresh(e, pid, saved_kind);
	ops = ops_of(e->kind);
	if (!ops)
		return -EINVAL;
	copy = *e;
	r = ops->save(&copy);
	if (r == 0)
		*e = copy;
	return r;
}

/* The image record's summary of fd's state (CKPT_FD_* comments). */
void event_fds_describe(int fd, int64_t *offset, uint32_t *info)
{
	const struct event_fd *e = find(fd);

	*offset = -1;
	*info = 0;
	if (!e)
		return;
	switch (e->kind) {
	case CKPT_FD_EVENTFD:
		*offset = (int64_t)e->eventfd.count;
		*info = e->eventfd.semaphore;
		break;
	case CKPT_FD_TIMERFD:
		*offset = (int64_t)e->timerfd.ticks;
		*info = (uint32_t)e->timerfd.clockid;
		break;
	case CKPT_FD_SIGNALFD:
		*offset = (int64_t)e->sigmask;
		break;
	case CKPT_FD_EPOLL:
		*info = e->epoll.n;
		break;
	case CKPT_FD_INOTIFY:
		*info = inotify_watch_count(fd);
		break;
	case CKPT_FD_PIDFD:
		pidfds_describe(fd, offset, info);
		break;
	}
}

/* The saved state of fd put into target (a description of its kind
 * that ckpt_restart made for every process sharing it). 0 or -errno. */
int event_fds_apply(int fd, int target)
{
	const struct event_fd *e = find(fd);
	const struct event_fd_ops *ops;

	if (!e)
		return -ENOENT;
	ops = ops_of(e->kind);
	return ops->apply ? ops->apply(e, target) : 0;
}

/* A new fd with the saved state of fd (any number, close-on-exec), or
 * -errno. */
int event_fds_restore(int fd)
{
	const struct event_fd *e = find(fd);
	int made, r;

	if (!e)
		return -ENOENT;
	made = ops_of(e->kind)->restore(e);
	if (made < 0)
		return made;
	r = event_fds_apply(fd, made);
	if (r < 0) {
		close(made);
		return r;
	}
	return made;
}

/* Re-add the saved interest list of epoll fd epfd, now that every fd
 * exists. A target that fails is said; the others still come back. */
void event_fds_restore_interest(int epfd)
{
	const struct event_fd *e = find(epfd);

	if (!e || e->kind != CKPT_FD_EPOLL)
		return;
	for (uint32_t j = 0; j < e->epoll.n; j++) {
		const struct epoll_target *t = &targets[e->epoll.first + j];
		struct epoll_event ev = { .events = t->events,
					  .data.u64 = t->data };

		if (t->dropped)
			continue;
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, t->fd, &ev) < 0)
			ckpt_log("fd %d (epoll instance): cannot watch fd %d "
				 "again (events %#x, data %#llx): %s; the "
				 "program will not hear of it", epfd, t->fd,
				 t->events, (unsigned long long)t->data,
				 strerror(errno));
	}
}
