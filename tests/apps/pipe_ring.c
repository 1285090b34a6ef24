/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pipe_ring NPROC TOKENS ROUNDS DELAY_MS: NPROC processes in a ring of
 * pipes (process i reads pipe i, writes pipe i+1), TOKENS records of 64
 * bytes circulating, so bytes are always in flight. Each record carries
 * its token number, its hop count and a running hash; every process
 * checks that tokens arrive in order, at the right hop, with the right
 * hash (a lost, doubled or corrupted record fails). Process 0 retires a
 * token after ROUNDS rounds, then closes its write end; EOF travels the
 * ring and every process exits.
 * Process 0 also keeps one record in a pipe of its own (non-blocking read
 * end): it writes round r and reads back round r - 1.
 * Output: "round R" from process 0 as token 0 passes, then
 * "OK ring <hash>", the hash over every record process 0 saw.
 */
#include <fcntl.h>
#include <sys/wait.h>
#include "app_util.h"

#define MAXP 16

struct record {
	uint32_t token, hops;
	uint64_t hash;
	char pad[48];
};

static unsigned long nproc, tokens, rounds, delay_ms;

static void fail(int who, const char *fmt, unsigned long a, unsigned long b)
{
	printf("FAIL process %d: ", who);
	printf(fmt, a, b);
	putchar('\n');
	fflush(stdout);
	exit(1);
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return done ? -1 : 0;
		done += n;
	}
	return 1;
}

static void write_full(int who, int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail(who, "write: errno %lu%lu", errno, 0);
		done += n;
	}
}

static uint64_t next_hash(const struct record *r)
{
	return mix64(r->hash ^ ((uint64_t)r->token << 32 | r->hops));
}

static void self_pipe_step(int rfd, int wfd, unsigned long round)
{
	unsigned long got;

	if (round > 1) {
		if (read(rfd, &got, sizeof(got)) != sizeof(got))
			fail(0, "self pipe: nothing to read (errno %lu)%lu",
			     errno, 0);
		if (got != round - 1)
			fail(0, "self pipe: got round %lu, want %lu", got,
			     round - 1);
	}
	write_full(0, wfd, &round, sizeof(round));
}

/* Returns the hash over every record this process saw. */
static uint64_t run(int who, int in, int out, int self_r, int self_w)
{
	uint64_t seen = FNV1A_INIT;
	uint32_t expect = 0;
	unsigned long retired = 0;
	struct record r;

	while (read_full(in, &r, sizeof(r)) == 1) {
		if (r.token != expect)
			fail(who, "token %lu arrived, want %lu", r.token,
			     expect);
		expect = (expect + 1) % tokens;
		if (r.hops % nproc != (unsigned long)who)
			fail(who, "token at hop %lu, want hop %% nproc = %lu",
			     r.hops, who);
		seen = fnv1a(seen, &r, sizeof(r));
		if (who == 0 && r.token == 0 && r.hops) {
			say("round %lu", (unsigned long)r.hops / nproc);
			self_pipe_step(self_r, self_w, r.hops / nproc);
		}
		sleep_ms(delay_ms);
		if (who == 0 && r.hops == nproc * rounds) {
			if (++retired == tokens)
				break;
			continue;
		}
		r.hops++;
		r.hash = next_hash(&r);
		write_full(who, out, &r, sizeof(r));
	}
	return seen;
}

int main(int argc, char **argv)
{
	int p[MAXP][2], self[2];
	pid_t kids[MAXP];
	uint64_t seen;

	if (argc != 5)
		die("pipe_ring", "usage: pipe_ring NPROC TOKENS ROUNDS DELAY_MS");
	nproc = parse_ulong("pipe_ring", "NPROC", argv[1], 2, MAXP);
	tokens = parse_ulong("pipe_ring", "TOKENS", argv[2], 1, 64);
	rounds = parse_ulong("pipe_ring", "ROUNDS", argv[3], 1, 1000000);
	delay_ms = parse_ulong("pipe_ring", "DELAY_MS", argv[4], 0, 1000);
	for (unsigned long i = 0; i < nproc; i++)
		if (pipe(p[i]) < 0)
			die("pipe_ring", "pipe: %s", strerror(errno));
	if (pipe(self) < 0 || fcntl(self[0], F_SETFL, O_NONBLOCK) < 0)
		die("pipe_ring", "self pipe: %s", strerror(errno));
	for (unsigned long i = 1; i < nproc; i++) {
		fflush(stdout);
		kids[i] = fork();
		if (kids[i] < 0)
			die("pipe_ring", "fork: %s", strerror(errno));
		if (kids[i] == 0) {
			int in = p[i][0], out = p[(i + 1) % nproc][1];

			for (unsigned long j = 0; j < nproc; j++) {
				if (p[j][0] != in)
					close(p[j][0]);
				if (p[j][1] != out)
					close(p[j][1]);
			}
			close(self[0]);
			close(self[1]);
			run(i, in, out, -1, -1);
			exit(0);
		}
	}
	for (unsigned long j = 0; j < nproc; j++) {
		if (j != 0)
			close(p[j][0]);
		if (j != 1)
			close(p[j][1]);
	}
	for (uint32_t t = 0; t < tokens; t++) {
		struct record r = { .token = t, .hops = 0 };

		r.hash = next_hash(&r);
		r.hops = 1;
		write_full(0, p[1][1], &r, sizeof(r));
	}
	say("start ring of %lu processes", nproc);
	seen = run(0, p[0][0], p[1][1], self[0], self[1]);
	close(p[1][1]);
	for (unsigned long i = 1; i < nproc; i++) {
		int status;

		if (waitpid(kids[i], &status, 0) != kids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail(0, "process %lu ended badly (status %lu)", i,
			     status);
	}
	say("OK ring %016llx", (unsigned long long)seen);
	return 0;
}
