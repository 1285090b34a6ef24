/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * eventloop TICKS PERIOD_MS: an epoll loop, each fd told apart by its
 * 64-bit epoll data only:
 *   a periodic CLOCK_MONOTONIC timerfd (PERIOD_MS): "tick N" per
 *     expiration, N counting all of them; the loop ends at TICKS;
 *   an eventfd (EPOLLET) the loop writes N to at every tick and reads
 *     only at every 5th: its counter mostly holds a sum not yet read;
 *   a signalfd for SIGUSR1 (blocked): the program queues itself one at
 *     every 4th tick ("signal self"); others are "signal external";
 *   a pipe the loop writes "abc" to at every 2nd tick ("pipe P");
 *   a "hold" eventfd (EPOLLONESHOT) written once (777) and read only at
 *     the end: its one event comes before the first tick ("hold ready").
 * Outside the epoll: a semaphore eventfd (EFD_SEMAPHORE, TICKS) read once
 * per tick, a one-shot timerfd that expired at once and a CLOCK_REALTIME
 * TFD_TIMER_ABSTIME timerfd an hour ahead, both read at the end, and a
 * signalfd for SIGUSR2 (blocked), queued once (4242), read at the end.
 * At the end: "result ..." and "OK eventloop"; a wrong value: "FAIL ...".
 * eventloop TICKS PERIOD_MS odd: also two epoll entries a restart cannot
 * bring back: a userfaultfd (UFFD_USER_MODE_ONLY: no privilege needed;
 * it never fires), and an eventfd registered at a number then moved (dup,
 * close): "odd userfaultfd U moved FROM TO".
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include "app_util.h"

#define D_TIMER	0x7100000000000001ULL
#define D_EVENT	0xe0e0e0e000000002ULL
#define D_SIG	0x5100000000000003ULL
#define D_PIPE	0x9100000000000004ULL
#define D_HOLD	0xe3e3000000000005ULL

static int ep, tfd, efd, sfd, pipefd[2], hold, sem, once, wall, usr2fd;
static unsigned long ticks, want_ticks, period_ms;
static unsigned long long efd_sum, efd_written, pipe_bytes, sem_reads;
static unsigned long self_signals, external_signals, hold_events;

static void watch(int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("eventloop", "epoll_ctl ADD fd %d: %s", fd,
		    strerror(errno));
}

static void arm(int fd, int flags, time_t sec, long ms, long period)
{
	struct itimerspec its = {
		.it_interval = { period / 1000, (period % 1000) * 1000000 },
		.it_value = { sec + ms / 1000, (ms % 1000) * 1000000 },
	};

	if (timerfd_settime(fd, flags, &its, NULL) < 0)
		die("eventloop", "timerfd_settime: %s", strerror(errno));
}

/* Entries whose fd a restart cannot re-add: they never fire. */
static void odd_entries(void)
{
	int uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK |
			   UFFD_USER_MODE_ONLY);
	int from = eventfd(0, 0), to;
	struct uffdio_api api = { .api = UFFD_API };

	/* it polls as an error before the API handshake, or blocking */
	if (uffd < 0 || from < 0 || ioctl(uffd, UFFDIO_API, &api) < 0)
		die("eventloop", "userfaultfd/eventfd: %s", strerror(errno));
	watch(uffd, EPOLLIN, 0xbad0000000000001ULL);
	watch(from, EPOLLIN, 0xbad0000000000002ULL);
	to = dup(from);
	if (to < 0 || close(from) < 0)
		die("eventloop", "dup: %s", strerror(errno));
	say("odd userfaultfd %d moved %d %d", uffd, from, to);
}

static void setup(void)
{
	struct timespec now;
	sigset_t usr1, usr2;
	uint64_t v = 777;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &usr1, NULL) < 0 ||
	    sigprocmask(SIG_BLOCK, &usr2, NULL) < 0)
		die("eventloop", "sigprocmask: %s", strerror(errno));
	usr2fd = signalfd(-1, &usr2, SFD_NONBLOCK);
	if (usr2fd < 0 ||
	    sigqueue(getpid(), SIGUSR2, (union sigval){ .sival_int = 4242 }))
		die("eventloop", "signalfd/sigqueue SIGUSR2: %s",
		    strerror(errno));
	ep = epoll_create1(EPOLL_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	efd = eventfd(0, EFD_NONBLOCK);
	sfd = signalfd(-1, &usr1, SFD_NONBLOCK);
	hold = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	sem = eventfd((unsigned)want_ticks, EFD_SEMAPHORE | EFD_NONBLOCK);
	once = timerfd_create(CLOCK_MONOTONIC, 0);
	wall = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
	if (ep < 0 || tfd < 0 || efd < 0 || sfd < 0 || hold < 0 || sem < 0 ||
	    once < 0 || wall < 0 || pipe2(pipefd, O_NONBLOCK) < 0)
		die("eventloop", "making the fds: %s", strerror(errno));
	if (write(hold, &v, sizeof(v)) != sizeof(v))
		die("eventloop", "write hold: %s", strerror(errno));
	watch(tfd, EPOLLIN, D_TIMER);
	watch(efd, EPOLLIN | EPOLLET, D_EVENT);
	watch(sfd, EPOLLIN, D_SIG);
	watch(pipefd[0], EPOLLIN, D_PIPE);
	watch(hold, EPOLLIN | EPOLLONESHOT, D_HOLD);
	arm(once, 0, 0, 1, 0);
	clock_gettime(CLOCK_REALTIME, &now);
	arm(wall, TFD_TIMER_ABSTIME, now.tv_sec + 3600, 0, 0);
	arm(tfd, 0, 0, (long)period_ms, (long)period_ms);
	say("fds epoll %d timerfd %d eventfd %d signalfd %d pipe %d %d hold %d "
	    "sem %d once %d wall %d usr2 %d", ep, tfd, efd, sfd, pipefd[0],
	    pipefd[1], hold, sem, once, wall, usr2fd);
}

static uint64_t read_u64(int fd, const char *what)
{
	uint64_t v = 0;
	ssize_t n = read(fd, &v, sizeof(v));

	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n != sizeof(v)) {
		say("FAIL read %s (fd %d): %zd bytes, %s", what, fd, n,
		    n < 0 ? strerror(errno) : "");
		exit(1);
	}
	return v;
}

static void one_tick(void)
{
	uint64_t n = ++ticks;
	union sigval val = { .sival_int = (int)n };

	say("tick %lu", ticks);
	if (write(efd, &n, sizeof(n)) != sizeof(n))
		die("eventloop", "write eventfd: %s", strerror(errno));
	efd_written += n;
	if (ticks % 2 == 0 && write(pipefd[1], "abc", 3) != 3)
		die("eventloop", "write pipe: %s", strerror(errno));
	if (ticks % 4 == 0 && sigqueue(getpid(), SIGUSR1, val) < 0)
		die("eventloop", "sigqueue: %s", strerror(errno));
	/* a semaphore gives 1 per read */
	expect_eq("eventloop", "semaphore read", (long)read_u64(sem, "sem"), 1);
	sem_reads++;
}

static void on_signal(void);

/* Several expirations at once (the loop was held up): one tick each, and
 * the SIGUSR1 a tick queues read before the next tick queues another
 * (a second one queued while the first is pending would be merged). */
static void on_timer(void)
{
	uint64_t n = read_u64(tfd, "timerfd");

	while (n-- && ticks < want_ticks) {
		one_tick();
		on_signal();
	}
}

static void on_signal(void)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		expect_eq("eventloop", "signo", si.ssi_signo, SIGUSR1);
		if (si.ssi_code == SI_QUEUE) {
			self_signals++;
			say("signal self %d", si.ssi_int);
		} else {
			external_signals++;
			say("signal external %lu", external_signals);
		}
	}
}

static void on_pipe(void)
{
	char buf[256];
	ssize_t n;

	while ((n = read(pipefd[0], buf, sizeof(buf))) > 0)
		pipe_bytes += n;
	say("pipe %llu", pipe_bytes);
}

static void dispatch(uint64_t data)
{
	switch (data) {
	case D_TIMER:
		on_timer();
		break;
	case D_EVENT:
		if (ticks % 5 == 0) {	/* else left unread */
			efd_sum += read_u64(efd, "eventfd");
			say("eventfd %llu", efd_sum);
		}
		break;
	case D_SIG:
		on_signal();
		break;
	case D_PIPE:
		on_pipe();
		break;
	case D_HOLD:
		hold_events++;
		say("hold ready");
		break;
	default:
		say("FAIL epoll data %#llx", (unsigned long long)data);
		exit(1);
	}
}

/* The SIGUSR2 queued at the start, pending all along. */
static int pending_usr2(void)
{
	struct signalfd_siginfo si;

	if (read(usr2fd, &si, sizeof(si)) != sizeof(si))
		return -errno;
	expect_eq("eventloop", "usr2 signo", si.ssi_signo, SIGUSR2);
	return si.ssi_int;
}

static void finish(void)
{
	struct itimerspec cur;
	int usr2 = pending_usr2();
	uint64_t held = read_u64(hold, "hold"), expired = 0, left;
	int fl = fcntl(once, F_GETFL);

	/* the one-shot timer's expiration is read now (blocking fd) */
	if (fl >= 0 && fcntl(once, F_SETFL, fl | O_NONBLOCK) == 0)
		expired = read_u64(once, "once");
	efd_sum += read_u64(efd, "eventfd");
	on_signal();
	on_pipe();
	while (read_u64(sem, "sem"))
		sem_reads++;
	if (timerfd_gettime(wall, &cur) < 0)
		die("eventloop", "timerfd_gettime: %s", strerror(errno));
	left = cur.it_value.tv_sec;
	if (timerfd_gettime(tfd, &cur) < 0)
		die("eventloop", "timerfd_gettime: %s", strerror(errno));
	say("result ticks %lu eventfd_sum %llu written %llu sem_reads %llu "
	    "hold %llu hold_events %lu once %llu wall_left %llu interval_ms "
	    "%ld pipe_bytes %llu self_signals %lu external_signals %lu usr2 %d",
	    ticks, efd_sum, efd_written, sem_reads, (unsigned long long)held,
	    hold_events, (unsigned long long)expired, (unsigned long long)left,
	    cur.it_interval.tv_sec * 1000 + cur.it_interval.tv_nsec / 1000000,
	    pipe_bytes, self_signals, external_signals, usr2);
	expect_eq("eventloop", "eventfd sum", (long)efd_sum, (long)efd_written);
	expect_eq("eventloop", "semaphore reads", (long)sem_reads,
		  (long)want_ticks);
	expect_eq("eventloop", "hold", (long)held, 777);
	expect_eq("eventloop", "pending SIGUSR2 value", usr2, 4242);
	expect_eq("eventloop", "one-shot timer", (long)expired, 1);
	expect_eq("eventloop", "pipe bytes", (long)pipe_bytes,
		  (long)(ticks / 2 * 3));
	expect_eq("eventloop", "self signals", (long)self_signals,
		  (long)(ticks / 4));
}

int main(int argc, char **argv)
{
	struct epoll_event ev[8];

	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "odd")))
		die("eventloop", "usage: eventloop TICKS PERIOD_MS [odd]");
	want_ticks = parse_ulong("eventloop", "TICKS", argv[1], 1, 100000);
	period_ms = parse_ulong("eventloop", "PERIOD_MS", argv[2], 1, 10000);
	setup();
	if (argc == 4)
		odd_entries();
	while (ticks < want_ticks) {
		int n = epoll_wait(ep, ev, 8, 10000);

		if (n < 0 && errno != EINTR)
			die("eventloop", "epoll_wait: %s", strerror(errno));
		if (n == 0) {
			say("FAIL epoll_wait: nothing for 10 s");
			return 1;
		}
		for (int i = 0; i < n; i++)
			dispatch(ev[i].data.u64);
	}
	finish();
	say("OK eventloop");
	return 0;
}
