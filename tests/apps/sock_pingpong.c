/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sock_pingpong COUNT AHEAD DELAY_MS: a parent and its forked child over
 * one socketpair(AF_UNIX, SOCK_STREAM). The parent keeps AHEAD requests
 * of 64 bytes in flight; the child answers each with a record derived
 * from it; the parent checks that replies come in order with the right
 * content, prints "reply N", and sends the next request, COUNT in all.
 * Then it shuts down its sending side, the child sees EOF and exits 0.
 * Last line "OK sockets <hash over all replies>".
 */
#include <sys/socket.h>
#include <sys/wait.h>
#include "app_util.h"

struct record {
	uint64_t seq, value;
	char pad[48];
};

static int io_full(int fd, void *buf, size_t len, int out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? write(fd, (char *)buf + done, len - done) :
				  read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return done ? -1 : 0;
		done += n;
	}
	return 1;
}

static void child(int fd, unsigned long delay)
{
	struct record r;

	while (io_full(fd, &r, sizeof(r), 0) == 1) {
		r.value = mix64(r.value ^ r.seq);
		sleep_ms(delay);
		if (io_full(fd, &r, sizeof(r), 1) != 1)
			die("sock_pingpong", "child write: %s", strerror(errno));
	}
	exit(0);
}

static void request(int fd, uint64_t seq)
{
	struct record r = { .seq = seq, .value = seq * 0x9e3779b97f4a7c15ull };

	if (io_full(fd, &r, sizeof(r), 1) != 1)
		die("sock_pingpong", "request write: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	unsigned long count, ahead, delay;
	uint64_t hash = FNV1A_INIT, sent = 0;
	int sv[2], status;
	pid_t pid;

	if (argc != 4)
		die("sock_pingpong", "usage: sock_pingpong COUNT AHEAD DELAY_MS");
	count = parse_ulong("sock_pingpong", "COUNT", argv[1], 1, 10000000);
	ahead = parse_ulong("sock_pingpong", "AHEAD", argv[2], 1, 64);
	delay = parse_ulong("sock_pingpong", "DELAY_MS", argv[3], 0, 1000);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		die("sock_pingpong", "socketpair: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("sock_pingpong", "fork: %s", strerror(errno));
	if (pid == 0) {
		close(sv[0]);
		child(sv[1], delay);
	}
	close(sv[1]);
	while (sent < ahead && sent < count)
		request(sv[0], ++sent);
	say("start");
	for (uint64_t want = 1; want <= count; want++) {
		struct record r;

		if (io_full(sv[0], &r, sizeof(r), 0) != 1)
			die("sock_pingpong", "reply %llu missing",
			    (unsigned long long)want);
		if (r.seq != want ||
		    r.value != mix64(want * 0x9e3779b97f4a7c15ull ^ want)) {
			say("FAIL reply %llu: seq %llu", (unsigned long long)want,
			    (unsigned long long)r.seq);
			return 1;
		}
		hash = fnv1a(hash, &r, sizeof(r));
		say("reply %llu", (unsigned long long)want);
		if (sent < count)
			request(sv[0], ++sent);
	}
	shutdown(sv[0], SHUT_WR);
	if (waitpid(pid, &status, 0) != pid || status != 0)
		die("sock_pingpong", "child status %d", status);
	say("OK sockets %016llx", (unsigned long long)hash);
	return 0;
}
