/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * unix_dgram_fds TYPE DIR: messages queued on a socketpair(AF_UNIX, TYPE)
 * (TYPE dgram, seqpacket or stream: between a parent and its forked
 * child; self: a dgram pair inside one process; path, abstract: two
 * datagram sockets bound to DIR/a.sock and DIR/b.sock, or to abstract
 * names made from DIR, connected to each other), some carrying fds
 * (SCM_RIGHTS). Over a stream, each message is read by its known length.
 * With names, the child checks its end's name and its peer's.
 *
 * unix_dgram_fds server DIR: the parent's datagram socket is bound to
 * DIR/srv.sock, unconnected; the child's, bound to an abstract name, is
 * connected to it. The server sends the child two messages; after DIR/go
 * the child reads them and sends one to the server, which reads it.
 *
 * The parent sends the child four messages: the first carries a pipe's
 * read end (bytes in the pipe, its write end closed) and a file DIR/data
 * open at offset 4; then one of 5000 bytes. The child sends three back.
 * Both print "READY" and wait for the file DIR/go, then read what is
 * queued: each message's length, content (or hash) and fds' contents,
 * and who sent it (SCM_CREDENTIALS: both ends have SO_PASSCRED),
 * then that the queue is empty, and the options of the child's end
 * (O_NONBLOCK, FD_CLOEXEC, SO_PASSCRED, SO_RCVBUF). Last line "OK".
 */
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "unix_dgram_fds"

static char dir[4096];
static pid_t cred_pid;		/* of the last message received; 0: none */
static pid_t child_pid;
static int stream;		/* SOCK_STREAM: messages have no boundary */
static struct sockaddr_un names[2];	/* path, abstract: a and b */
static socklen_t names_len;
static const size_t child_lens[] = { 24, 6, 5000, 15 };
static const size_t parent_lens[] = { 5, 15, 2000 };
static char big[5000];

static void send_fds(int fd, const char *msg, size_t len, const int *fds,
		     int nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	if (sendmsg(fd, &mh, 0) != (ssize_t)len)
		die(PROG, "sendmsg: %s", strerror(errno));
}

static void send_text(int fd, const char *msg)
{
	send_fds(fd, msg, strlen(msg), NULL, 0);
}

/* The parent's side: a pipe's read end and a file in one message. */
static void parent_sends(int fd)
{
	char path[4200];
	int p[2], fds[2];
	const char *bytes = "pipe bytes: 0123456789abcdef";

	if (pipe(p) < 0 || write(p[1], bytes, strlen(bytes)) < 0)
		die(PROG, "pipe: %s", strerror(errno));
	close(p[1]);
	snprintf(path, sizeof(path), "%s/data", dir);
	fds[0] = p[0];
	fds[1] = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fds[1] < 0 || write(fds[1], "0123456789", 10) != 10 ||
	    lseek(fds[1], 4, SEEK_SET) != 4)
		die(PROG, "%s: %s", path, strerror(errno));
	send_fds(fd, "first: a pipe and a file", 24, fds, 2);
	close(fds[0]);
	close(fds[1]);
	send_text(fd, "second");
	send_fds(fd, big, sizeof(big), NULL, 0);
	send_text(fd, "fourth and last");
}

static void child_sends(int fd)
{
	send_text(fd, "c-one");
	send_text(fd, "c-two is longer");
	send_fds(fd, big, 2000, NULL, 0);
}

static void wait_go(void)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/go", dir);
	for (int i = 0; i < 30000; i++) {
		if (stat(path, &st) == 0)
			return;
		sleep_ms(20);
	}
	die(PROG, "%s never appeared", path);
}

static void print_fd(const char *who, int i, int fd)
{
	char buf[256];
	size_t got = 0;
	ssize_t n;

	while (got < sizeof(buf) - 1 &&
	       (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	buf[got] = 0;
	say("%s fd %d: \"%s\"", who, i, buf);
	close(fd);
}

/* Read one message, waiting for it when the end is non-blocking. */
static ssize_t recv_one(int fd, char *buf, size_t len, int *fds, int *nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(8 * sizeof(int)) +
			 CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct pollfd pfd = { fd, POLLIN, 0 };
	ssize_t n;

	if (poll(&pfd, 1, 60000) != 1)
		die(PROG, "no message within 60 s");
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		die(PROG, "recvmsg: %s", strerror(errno));
	*nfds = 0;
	cred_pid = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
	     c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred uc;

			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			cred_pid = uc.pid;
		}
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			memcpy(fds + *nfds, CMSG_DATA(c), k * sizeof(int));
			*nfds += k;
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		say("FAIL message cut short (flags %#x)", mh.msg_flags);
		exit(1);
	}
	return n;
}

/* Who the credentials of the last message name. */
static const char *sender(char *buf, size_t len)
{
	if (!cred_pid)
		return "no credentials";
	if (cred_pid == getppid())
		return "sent by the parent";
	if (cred_pid == getpid())
		return "sent by itself";
	if (child_pid && cred_pid == child_pid)
		return "sent by the child";
	snprintf(buf, len, "sent by pid %d", (int)cred_pid);
	return buf;
}

/* One message: one read, or over a stream, reads up to its length. */
static ssize_t recv_msg(int fd, char *buf, size_t len, size_t want, int *fds,
			int *nfds)
{
	size_t got = 0;
	int k;

	if (!stream)
		return recv_one(fd, buf, len, fds, nfds);
	*nfds = 0;
	while (got < want) {
		ssize_t n = recv_one(fd, buf + got, want - got, fds + *nfds,
				     &k);

		if (n <= 0)
			die(PROG, "end of stream after %zu of %zu bytes", got,
			    want);
		got += n;
		*nfds += k;
	}
	return got;
}

static void receive(const char *who, int fd, const size_t *lens, int count)
{
	char other[64];
	static char buf[65536];
	int fds[8], nfds;
	ssize_t n;

	for (int i = 0; i < count; i++) {
		n = recv_msg(fd, buf, sizeof(buf), lens[i], fds, &nfds);

		if (n < 100) {
			buf[n] = 0;
			say("%s got %zd \"%s\", %d fds, %s", who, n, buf, nfds,
			    sender(other, sizeof(other)));
		} else {
			say("%s got %zd bytes hash %016llx, %d fds, %s", who,
			    n, (unsigned long long)fnv1a(FNV1A_INIT, buf, n),
			    nfds, sender(other, sizeof(other)));
		}
		for (int j = 0; j < nfds; j++)
			print_fd(who, j, fds[j]);
	}
	n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n == 0) {		/* seqpacket, stream: the peer has gone */
		say("%s queue empty, end of file", who);
	} else if (n > 0 || errno != EAGAIN) {
		say("FAIL %s: a message more than was sent", who);
		exit(1);
	} else {
		say("%s queue empty", who);
	}
}

static void print_options(int fd)
{
	int pass = 0, rcv = 0;
	socklen_t len = sizeof(pass);

	getsockopt(fd, SOL_SOCKET, SO_PASSCRED, &pass, &len);
	len = sizeof(rcv);
	getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len);
	say("options nonblock %d cloexec %d passcred %d rcvbuf %d",
	    !!(fcntl(fd, F_GETFL) & O_NONBLOCK),
	    !!(fcntl(fd, F_GETFD) & FD_CLOEXEC), pass, rcv);
}

/* The name of end i: DIR/a.sock or an abstract name made from DIR. */
static void make_name(int i, int abstract)
{
	struct sockaddr_un *a = &names[i];

	a->sun_family = AF_UNIX;
	if (strlen(dir) > 90)
		die(PROG, "%s: too long for a socket name", dir);
	if (abstract)
		snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
			 "unix_dgram_fds-%016llx-%c", (unsigned long long)
			 fnv1a(FNV1A_INIT, dir, strlen(dir)), 'a' + i);
	else
		snprintf(a->sun_path, sizeof(a->sun_path), "%.90s/%c.sock", dir,
			 'a' + i);
	/* abstract: the leading NUL and the name; a path and its NUL */
	names_len = offsetof(struct sockaddr_un, sun_path) + 1 +
		    strlen(a->sun_path + !!abstract);
}

/* Two datagram sockets bound to names[] and connected to each other. */
static void named_pair(int *sv, int abstract)
{
	for (int i = 0; i < 2; i++) {
		make_name(i, abstract);
		sv[i] = socket(AF_UNIX, SOCK_DGRAM, 0);
		if (sv[i] < 0 || bind(sv[i], (struct sockaddr *)&names[i],
				      names_len) < 0)
			die(PROG, "bind: %s", strerror(errno));
	}
	for (int i = 0; i < 2; i++)
		if (connect(sv[i], (struct sockaddr *)&names[1 - i],
			    names_len) < 0)
			die(PROG, "connect: %s", strerror(errno));
}

/* With names: the child's end (b) is still bound to its name and
 * connected to a's. */
static void check_names(int fd)
{
	struct sockaddr_un got;
	socklen_t len = sizeof(got);
	int self_ok, peer_ok;

	if (!names_len)
		return;
	self_ok = getsockname(fd, (struct sockaddr *)&got, &len) == 0 &&
		  len == names_len && !memcmp(&got, &names[1], len);
	len = sizeof(got);
	peer_ok = getpeername(fd, (struct sockaddr *)&got, &len) == 0 &&
		  len == names_len && !memcmp(&got, &names[0], len);
	say("names: own %s, peer's %s", self_ok ? "kept" : "lost",
	    peer_ok ? "kept" : "lost");
}

static void server_mode(void)
{
	struct sockaddr_un srv = { .sun_family = AF_UNIX };
	socklen_t srv_len;
	int fds[8], nfds, s, c, status;
	char buf[256];
	ssize_t n;
	pid_t pid;

	make_name(1, 1);		/* the client's abstract name */
	snprintf(srv.sun_path, sizeof(srv.sun_path), "%.90s/srv.sock", dir);
	srv_len = offsetof(struct sockaddr_un, sun_path) +
		  strlen(srv.sun_path) + 1;
	s = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&srv, srv_len) < 0)
		die(PROG, "server bind: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(s);
		c = socket(AF_UNIX, SOCK_DGRAM, 0);
		if (c < 0 || bind(c, (struct sockaddr *)&names[1],
				  names_len) < 0 ||
		    connect(c, (struct sockaddr *)&srv, srv_len) < 0)
			die(PROG, "client: %s", strerror(errno));
		say("child READY");
		wait_go();
		for (int i = 0; i < 2; i++) {
			n = recv_one(c, buf, sizeof(buf) - 1, fds, &nfds);
			buf[n] = 0;
			say("client got %zd \"%s\"", n, buf);
		}
		send_text(c, "hello from the client");
		say("client sent");
		exit(0);
	}
	for (int tries = 0; ; tries++) {	/* until the client is bound */
		if (sendto(s, "to the client 1", 15, 0,
			   (struct sockaddr *)&names[1], names_len) == 15)
			break;
		if (tries == 3000)
			die(PROG, "sendto the client: %s", strerror(errno));
		sleep_ms(10);
	}
	if (sendto(s, "to the client 2", 15, 0, (struct sockaddr *)&names[1],
		   names_len) != 15)
		die(PROG, "sendto the client: %s", strerror(errno));
	say("parent READY");
	wait_go();
	if (waitpid(pid, &status, 0) != pid)
		die(PROG, "waitpid: %s", strerror(errno));
	n = recv_one(s, buf, sizeof(buf) - 1, fds, &nfds);
	buf[n] = 0;
	say("server got %zd \"%s\"", n, buf);
	say("child exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	say("OK");
}

int main(int argc, char **argv)
{
	int sv[2], type, one = 1, rcv = 100000, status;
	pid_t pid = 0;

	if (argc != 3)
		die(PROG, "usage: " PROG " dgram|seqpacket|stream|self|path|"
		    "abstract|server DIR");
	snprintf(dir, sizeof(dir), "%s", argv[2]);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = 'a' + (i * 7 + i / 26) % 26;
	if (!strcmp(argv[1], "server")) {
		server_mode();
		return 0;
	}
	type = !strcmp(argv[1], "seqpacket") ? SOCK_SEQPACKET :
	       !strcmp(argv[1], "stream") ? SOCK_STREAM : SOCK_DGRAM;
	stream = type == SOCK_STREAM;
	if (!strcmp(argv[1], "path") || !strcmp(argv[1], "abstract"))
		named_pair(sv, !strcmp(argv[1], "abstract"));
	else if (socketpair(AF_UNIX, type, 0, sv) < 0)
		die(PROG, "socketpair: %s", strerror(errno));
	/* the child's end: non-blocking, credentials, a larger buffer;
	 * the parent's: credentials, close-on-exec */
	if (fcntl(sv[1], F_SETFL, O_NONBLOCK) < 0 ||
	    setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)) ||
	    setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    fcntl(sv[0], F_SETFD, FD_CLOEXEC) < 0)
		die(PROG, "options: %s", strerror(errno));
	fflush(stdout);
	if (strcmp(argv[1], "self")) {
		pid = fork();
		if (pid < 0)
			die(PROG, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		if (pid == 0 && strcmp(argv[1], "self"))
			close(sv[0]);
		child_sends(sv[1]);
		if (!strcmp(argv[1], "self"))
			parent_sends(sv[0]);
		say("child READY");
		wait_go();
		print_options(sv[1]);
		check_names(sv[1]);
		receive("child", sv[1], child_lens, 4);
		if (strcmp(argv[1], "self"))
			return 0;
		receive("parent", sv[0], parent_lens, 3);
		say("OK");
		return 0;
	}
	child_pid = pid;
	close(sv[1]);
	parent_sends(sv[0]);
	say("parent READY");
	wait_go();
	if (waitpid(pid, &status, 0) != pid)
		die(PROG, "waitpid: %s", strerror(errno));
	receive("parent", sv[0], parent_lens, 3);
	say("child exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	say("OK");
	return 0;
}
