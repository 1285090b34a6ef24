/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * POSIX timers (timer_create). docs/resources.md tells the story:
 *
 *   checkpoint (threads stopped, their pending signals taken out and put
 *   back, which re-arms a periodic timer whose signal was queued): each
 *   timer's id, clock, signal, value and target is read from
 *   /proc/self/timers, its time left and interval from timer_gettime; a
 *   thread named as target is kept by its virtual tid.
 *
 *   restart, inside the restarted process once its threads exist (a
 *   SIGEV_THREAD_ID timer names one): each is made again with its own id
 *   (prctl PR_TIMER_CREATE_RESTORE_IDS, Linux 6.15), so the timer_t the
 *   program holds still names it, and armed with the time it had left
 *   and its interval: the time the program was stopped does not count,
 *   and no missed period fires. A CLOCK_REALTIME timer last set with
 *   TIMER_ABSTIME (wrappers/timer.c tells) keeps its deadline instead
 *   (wall_deadline). The overrun count starts again at 0.
 *
 * SIGEV_THREAD timers are SIGEV_THREAD_ID timers aimed at a helper thread
 * of wrappers/timer.c, restored like any other.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

#ifndef PR_TIMER_CREATE_RESTORE_IDS
#define PR_TIMER_CREATE_RESTORE_IDS		77
#define PR_TIMER_CREATE_RESTORE_IDS_OFF		0
#define PR_TIMER_CREATE_RESTORE_IDS_ON		1
#define PR_TIMER_CREATE_RESTORE_IDS_GET		2
#endif

#define POSIX_TIMERS_MAX	512
#define CPUCLOCK_PERTHREAD	4	/* the kernel's CPU clock id bits */
#define NSEC			1000000000LL

struct posix_timer {
	int id;
	int clockid;
	int signo;
	int notify;			/* SIGEV_SIGNAL, SIGEV_NONE, and
					   SIGEV_THREAD_ID with a target */
	pid_t target_vtid;		/* SIGEV_THREAD_ID: its thread */
	uint64_t value;			/* sigev_value */
	struct itimerspec its;		/* time left, interval */
	int absolute;			/* CLOCK_REALTIME, set TIMER_ABSTIME */
	int64_t realtime_ns;		/* CLOCK_REALTIME when saved */
};

static struct posix_timer timers[POSIX_TIMERS_MAX];
static int ntimers;
static char listing[64 << 10];		/* /proc/self/timers */

/* "notify: KIND/pid.N" or ".../tid.N" */
static int parse_notify(const char *p, struct posix_timer *t)
{
	const char *slash = strchr(p, '/');

	if (!slash)
		return -EPROTO;
	if (!strncmp(p, "signal/", 7))
		t->notify = SIGEV_SIGNAL;
	else if (!strncmp(p, "none/", 5))
		t->notify = SIGEV_NONE;
	else if (!strncmp(p, "thread/", 7))
		t->notify = SIGEV_THREAD;	/* raw: a signal to the kernel */
	else
		return -EPROTO;
	if (!strncmp(slash + 1, "tid.", 4)) {
		t->notify |= SIGEV_THREAD_ID;
		t->target_vtid = vpid_virt_from_real(atoi(slash + 5));
	}
	return 0;
}

/* One "ID: ..." block of /proc/self/timers, up to the next one. */
static int parse_timer(const char *p, struct posix_timer *t)
{
	const char *signal = strstr(p, "\nsignal: ");
	const char *notify = strstr(p, "\nnotify: ");
	const char *clock = strstr(p, "\nClockID: ");
	char *end;

	memset(t, 0, sizeof(*t));
	t->id = atoi(p + 4);
	if (!signal || !notify || !clock)
		return -EPROTO;
	t->signo = (int)strtol(signal + 9, &end, 10);
	if (*end != '/')
		return -EPROTO;
	t->value = strtoull(end + 1, NULL, 16);
	t->clockid = atoi(clock + 10);
	return parse_notify(notify + 9, t);
}

/* Why timer t cannot come back, or NULL. */
static const char *timer_problem(const struct posix_timer *t)
{
	if (t->clockid < 0 && (t->clockid & CPUCLOCK_PERTHREAD))
		return "it runs on a thread's CPU clock, which a restart "
		       "cannot tell";
	if (t->clockid < 0 && ~(t->clockid >> 3) != 0)
		return "it runs on another process's CPU clock";
	if ((t->notify & SIGEV_THREAD_ID) && t->target_vtid <= 0)
		return "the thread it signals is not known";
	return NULL;
}

static int can_restore_ids(void)
{
	return prctl(PR_TIMER_CREATE_RESTORE_IDS,
		     PR_TIMER_CREATE_RESTORE_IDS_GET, 0, 0, 0) >= 0;
}

/* A periodic timer whose signal was just taken out may read as
 * disarmed until the kernel re-arms it: its next expiration is then a
 * period away. */
static int read_time(struct posix_timer *t)
{
	struct timespec now;

	if (syscall(SYS_timer_gettime, t->id, &t->its) < 0)
		return -errno;
	if (!t->its.it_value.tv_sec && !t->its.it_value.tv_nsec)
		t->its.it_value = t->its.it_interval;
	t->absolute = (t->clockid == CLOCK_REALTIME ||
		       t->clockid == CLOCK_REALTIME_ALARM) &&
		      timer_set_absolute(t->id);
	clock_gettime(CLOCK_REALTIME, &now);
	t->realtime_ns = now.tv_sec * NSEC + now.tv_nsec;
	return 0;
}

static void save_one(const char *block)
{
	struct posix_timer *t = &timers[ntimers];
	const char *why;
	int r = parse_timer(block, t);

	if (r == 0)
		r = read_time(t);
	if (r < 0) {
		unrestored_add("POSIX timer %d: reading it failed: %s; a "
			       "restart leaves it out", t->id, strerror(-r));
		return;
	}
	why = timer_problem(t);
	if (why) {
		unrestored_add("POSIX timer %d (clock %d): %s; a restart leaves "
			       "it out", t->id, t->clockid, why);
		return;
	}
	if (ntimers == POSIX_TIMERS_MAX) {
		unrestored_add("POSIX timer %d: more than %d timers; a restart "
			       "leaves it out", t->id, POSIX_TIMERS_MAX);
		return;
	}
	ntimers++;
}

/* /proc/self/timers into listing; its length. */
static size_t read_listing(void)
{
	int fd = ckpt_open_raw("/proc/self/timers", O_RDONLY);
	size_t have = 0;
	ssize_t n = 1;

	if (fd < 0)
		return 0;	/* no /proc: nothing to say */
	while (n > 0 && have < sizeof(listing) - 1) {
		n = read(fd, listing + have, sizeof(listing) - 1 - have);
		have += n > 0 ? n : 0;
	}
	close(fd);
	listing[have] = 0;
	return have;
}

static int posix_timers_save(void)
{
	char *p;

	ntimers = 0;
	if (read_listing() == sizeof(listing) - 1)
		unrestored_add("POSIX timers: /proc/self/timers is longer than "
			       "%zu bytes; a restart leaves out those past it",
			       sizeof(listing));
	for (p = strstr(listing, "ID: "); p; p = strstr(p + 4, "\nID: ")) {
		if (*p == '\n')
			p++;
		save_one(p);
	}
	if (ntimers && !can_restore_ids())
		unrestored_add("%d POSIX timer(s): this kernel cannot make a "
			       "timer with a given id (PR_TIMER_CREATE_RESTORE"
			       "_IDS, Linux 6.15 or later); a restart leaves "
			       "them out", ntimers);
	return 0;
}

static int create_with_id(const struct posix_timer *t)
{
	struct sigevent sev;
	int id = t->id;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = t->notify;
	sev.sigev_signo = t->signo;
	sev.sigev_value.sival_ptr = (void *)(uintptr_t)t->value;
	if (t->notify & SIGEV_THREAD_ID)
		sev._sigev_un._tid = vpid_real_from_virt(t->target_vtid);
	if (syscall(SYS_timer_create, t->clockid, &sev, &id) < 0)
		return -errno;
	if (id != t->id) {
		syscall(SYS_timer_delete, id);
		return -EEXIST;
	}
	return 0;
}

static int64_t ns_of(const struct timespec *t)
{
	return t->tv_sec * NSEC + t->tv_nsec;
}

/*
 * A CLOCK_REALTIME timer set with TIMER_ABSTIME keeps its wall-clock
 * deadline. If that passed while the program was not running, it
 * expires once at once and its period goes on from there: missed
 * periods do not count (the rule of timerfds, event_fds.c).
 */
static void wall_deadline(const struct posix_timer *t, struct itimerspec *its)
{
	int64_t at = t->realtime_ns + ns_of(&t->its.it_value);
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	if (at < ns_of(&now))
		at = ns_of(&now);
	its->it_value = (struct timespec){ at / NSEC, at % NSEC };
}

/* Others go on with the time that was left: the time the program was
 * stopped does not count. */
static int restore_one(const struct posix_timer *t)
{
	struct itimerspec its = t->its;
	int r = create_with_id(t), flags = 0;

	if (r < 0 || (!its.it_value.tv_sec && !its.it_value.tv_nsec))
		return r;
	if (t->absolute) {
		wall_deadline(t, &its);
		flags = TIMER_ABSTIME;
	}
	if (syscall(SYS_timer_settime, t->id, flags, &its, NULL) < 0)
		r = -errno;
	return r;
}

/* In the restarted process, once every thread exists again (they do not
 * run yet: a signal a timer sends waits for them). */
void posix_timers_restore(void)
{
	if (!ntimers)
		return;
	if (prctl(PR_TIMER_CREATE_RESTORE_IDS, PR_TIMER_CREATE_RESTORE_IDS_ON,
		  0, 0, 0) < 0) {
		ckpt_log("%d POSIX timer(s) are not restored: this kernel "
			 "cannot make a timer with a given id "
			 "(PR_TIMER_CREATE_RESTORE_IDS: %s)", ntimers,
			 strerror(errno));
		return;
	}
	for (int i = 0; i < ntimers; i++) {
		int r = restore_one(&timers[i]);

		if (r < 0)
			ckpt_log("POSIX timer %d (clock %d, signal %d): making "
				 "it again failed: %s; the program will not "
				 "hear from it", timers[i].id,
				 timers[i].clockid, timers[i].signo,
				 strerror(-r));
	}
	prctl(PR_TIMER_CREATE_RESTORE_IDS, PR_TIMER_CREATE_RESTORE_IDS_OFF, 0,
	      0, 0);
}

const struct ckpt_resource_ops posix_timer_resource_ops = {
	.name = "POSIX timers",
	.save = posix_timers_save,
};
