/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * peer_pids N: the pid of the other process as a program reads it from
 * the kernel, in three places the sender's pid is written by the kernel.
 * The parent forks a child; they hold a Unix stream connection (the child
 * connected to the parent's listener, then the listener is closed) and a
 * datagram socketpair whose parent end has SO_PASSCRED. N rounds, in lock
 * step: the child sends the parent SIGUSR1 with kill and a datagram, the
 * parent reads the signal from a signalfd (ssi_pid), the datagram with
 * recvmmsg (its SCM_CREDENTIALS pid) and SO_PEERCRED of its connection,
 * each of which must be the pid fork() returned; it prints "round K" and
 * answers one byte, after which the child checks SO_PEERCRED of its end
 * (the parent's pid) and waits 20 ms. At the end the parent prints
 * "done rounds N wrong W child S", S the child's count of wrong pids.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "app_util.h"

#define PROG "peer_pids"

static int wrong;

static void check_pid(const char *what, pid_t got, pid_t want)
{
	if (got == want)
		return;
	wrong++;
	say("wrong %s: %d, not %d", what, (int)got, (int)want);
}

static pid_t peercred_pid(int fd)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		die(PROG, "SO_PEERCRED: %s", strerror(errno));
	return uc.pid;
}

static ssize_t full_io(int fd, void *buf, size_t len, int writing)
{
	ssize_t n;

	do
		n = writing ? write(fd, buf, len) : read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len)
		die(PROG, "%s fd %d: %zd: %s", writing ? "write" : "read", fd,
		    n, n < 0 ? strerror(errno) : "short");
	return n;
}

static pid_t recvmmsg_pid(int fd, unsigned want_round)
{
	char cbuf[CMSG_SPACE(sizeof(struct ucred))];
	unsigned round = ~0u;
	struct iovec iov = { &round, sizeof(round) };
	struct mmsghdr m = { .msg_hdr = { .msg_iov = &iov, .msg_iovlen = 1,
					  .msg_control = cbuf,
					  .msg_controllen = sizeof(cbuf) } };
	struct cmsghdr *c;
	struct ucred uc;
	int n;

	do
		n = recvmmsg(fd, &m, 1, 0, NULL);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		die(PROG, "recvmmsg: %d: %s", n, strerror(errno));
	expect_eq(PROG, "datagram round", round, want_round);
	c = CMSG_FIRSTHDR(&m.msg_hdr);
	if (!c || c->cmsg_type != SCM_CREDENTIALS)
		die(PROG, "datagram %u came without credentials", round);
	memcpy(&uc, CMSG_DATA(c), sizeof(uc));
	return uc.pid;
}

static pid_t signalfd_pid(int sfd)
{
	struct signalfd_siginfo si;

	full_io(sfd, &si, sizeof(si), 0);
	expect_eq(PROG, "signal from the signalfd", si.ssi_signo, SIGUSR1);
	return (pid_t)si.ssi_pid;
}

static void child_rounds(unsigned n, int stream, int dgram)
{
	pid_t parent = getppid();
	char ack;

	for (unsigned i = 0; i < n; i++) {
		if (kill(parent, SIGUSR1) < 0)
			die(PROG, "kill: %s", strerror(errno));
		full_io(dgram, &i, sizeof(i), 1);
		full_io(stream, &ack, 1, 0);
		check_pid("SO_PEERCRED of the child's end", peercred_pid(stream),
			  parent);
		sleep_ms(20);
	}
	_exit(wrong > 100 ? 100 : wrong);
}

static void parent_rounds(unsigned n, pid_t child, int stream, int dgram,
			  int sfd)
{
	char ack = 'a';

	for (unsigned i = 0; i < n; i++) {
		check_pid("ssi_pid", signalfd_pid(sfd), child);
		check_pid("SCM_CREDENTIALS by recvmmsg",
			  recvmmsg_pid(dgram, i), child);
		check_pid("SO_PEERCRED", peercred_pid(stream), child);
		say("round %u", i + 1);
		full_io(stream, &ack, 1, 1);
	}
}

/* A connected Unix stream pair made by connect/accept (SO_PEERCRED of a
 * socketpair names its maker, for both ends). */
static int listen_abstract(struct sockaddr_un *sa, socklen_t *len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		 "ckpt_peer_pids_%d", (int)getpid());
	*len = offsetof(struct sockaddr_un, sun_path) + 1 +
	       strlen(sa->sun_path + 1);
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, *len) < 0 ||
	    listen(fd, 1) < 0)
		die(PROG, "listen: %s", strerror(errno));
	return fd;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa;
	socklen_t salen;
	int pair[2], one = 1, lfd, stream, sfd, status;
	sigset_t usr1;
	unsigned n;
	pid_t child;

	if (argc != 2)
		die(PROG, "usage: peer_pids N");
	n = parse_ulong(PROG, "N", argv[1], 1, 100000);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	sfd = signalfd(-1, &usr1, 0);
	if (sfd < 0 || socketpair(AF_UNIX, SOCK_DGRAM, 0, pair) < 0 ||
	    setsockopt(pair[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)))
		die(PROG, "signalfd/socketpair: %s", strerror(errno));
	lfd = listen_abstract(&sa, &salen);
	child = fork();
	if (child < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (child == 0) {
		stream = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(stream, (struct sockaddr *)&sa, salen) < 0)
			die(PROG, "connect: %s", strerror(errno));
		child_rounds(n, stream, pair[1]);
	}
	stream = accept(lfd, NULL, NULL);
	if (stream < 0)
		die(PROG, "accept: %s", strerror(errno));
	close(lfd);
	parent_rounds(n, child, stream, pair[0], sfd);
	if (waitpid(child, &status, 0) != child)
		die(PROG, "waitpid: %s", strerror(errno));
	say("done rounds %u wrong %d child %d", n, wrong,
	    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}
