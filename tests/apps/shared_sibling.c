/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shared_sibling FILE TURNS DELAY_MS: two sibling processes write one file
 * through one open file description that neither shares with the parent
 * at the same number: the parent opens FILE (no O_APPEND), forks A, closes
 * its copy and forks B; A moves the fd to 7 and sends it to B over a
 * socketpair (SCM_RIGHTS); B keeps it at 9. They take turns (a token over
 * the socketpair) writing 9-byte records "A 000042\n" / "B 000042\n" at
 * the shared offset; B prints "turn I". With separate offsets the records
 * would overwrite each other. At the end the parent checks the file:
 * "OK shared <bytes> <hash>".
 */
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "app_util.h"

#define REC 9

static void fail(const char *what, long a)
{
	printf("FAIL %s %ld\n", what, a);
	fflush(stdout);
	exit(1);
}

static void send_fd(int sock, int fd)
{
	char byte = 'F', ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl, .msg_controllen = sizeof(ctl),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(sock, &m, 0) != 1)
		fail("sendmsg errno", errno);
}

static int recv_fd(int sock)
{
	char byte, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl, .msg_controllen = sizeof(ctl),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &m, 0) != 1)
		fail("recvmsg errno", errno);
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		fail("no fd passed", 0);
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static void token(int sock, int send)
{
	char byte = 'T';
	ssize_t n;

	do
		n = send ? write(sock, &byte, 1) : read(sock, &byte, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		fail("token errno", n < 0 ? errno : 0);
}

static void put(int fd, char who, unsigned long i)
{
	char rec[32];

	snprintf(rec, sizeof(rec), "%c %06lu\n", who, i % 1000000);
	if (write(fd, rec, REC) != REC)
		fail("write errno", errno);
}

/* A writes first, then B, each turn. */
static void sibling(char who, int sock, int fd, unsigned long turns,
		    unsigned long delay_ms)
{
	for (unsigned long i = 0; i < turns; i++) {
		if (who == 'A') {
			put(fd, 'A', i);
			token(sock, 1);
			token(sock, 0);
		} else {
			token(sock, 0);
			put(fd, 'B', i);
			say("turn %lu", i + 1);
			sleep_ms(delay_ms);
			token(sock, 1);
		}
	}
	exit(0);
}

static void check_file(const char *path, unsigned long turns)
{
	char rec[32], want[32];
	uint64_t h = FNV1A_INIT;
	FILE *f = fopen(path, "r");

	if (!f)
		die("shared_sibling", "%s: %s", path, strerror(errno));
	for (unsigned long i = 0; i < 2 * turns; i++) {
		snprintf(want, sizeof(want), "%c %06lu\n", i % 2 ? 'B' : 'A',
			 i / 2);
		if (fread(rec, 1, REC, f) != REC || memcmp(rec, want, REC))
			fail("wrong record at", (long)i);
		h = fnv1a(h, rec, REC);
	}
	if (fgetc(f) != EOF)
		fail("bytes after the last record", 0);
	fclose(f);
	say("OK shared %lu %016llx", 2 * turns * REC, (unsigned long long)h);
}

static pid_t fork_or_die(void)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("shared_sibling", "fork: %s", strerror(errno));
	return pid;
}

int main(int argc, char **argv)
{
	unsigned long turns, delay_ms;
	int sv[2], fd, status;

	if (argc != 4)
		die("shared_sibling", "usage: shared_sibling FILE TURNS "
		    "DELAY_MS");
	turns = parse_ulong("shared_sibling", "TURNS", argv[2], 1, 100000);
	delay_ms = parse_ulong("shared_sibling", "DELAY_MS", argv[3], 0, 1000);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		die("shared_sibling", "%s: %s", argv[1], strerror(errno));
	if (fork_or_die() == 0) {
		close(sv[1]);
		if (dup2(fd, 7) < 0)
			fail("dup2 errno", errno);
		close(fd);
		send_fd(sv[0], 7);
		sibling('A', sv[0], 7, turns, delay_ms);
	}
	close(fd);
	if (fork_or_die() == 0) {
		close(sv[0]);
		fd = recv_fd(sv[1]);
		if (dup2(fd, 9) < 0)
			fail("dup2 errno", errno);
		close(fd);
		sibling('B', sv[1], 9, turns, delay_ms);
	}
	close(sv[0]);
	close(sv[1]);
	for (int i = 0; i < 2; i++) {
		while (wait(&status) < 0)
			if (errno != EINTR)
				die("shared_sibling", "wait: %s",
				    strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			die("shared_sibling", "a sibling failed (%#x)",
			    status);
	}
	check_file(argv[1], turns);
	return 0;
}
