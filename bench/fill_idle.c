/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fill_idle MIB: the benchmark's process. Fill MIB MiB with random data,
 * print "ready", then idle: answer every line read on stdin with
 * "pong N", and print "resumed after N ms" whenever a 1 ms sleep took
 * longer than 20 ms (the process was stopped: a checkpoint, or a restart).
 * The lines "read" and "write" are answered instead with one timed pass
 * over all the memory, "read N us" (summing every word) or "write N us"
 * (adding 1 to every word): the first pass after a restart against the
 * same pass in the original process. The line "dirty" writes one word
 * in 1% of the pages, picked at random, and answers "dirtied N" (the
 * incremental checkpoint benchmark). "fork" answers "fork N us", the
 * time of one plain fork() (the snapshot benchmark's floor); "gap"
 * answers "gap N us", the longest the idle loop was held since the last
 * "gap" (a checkpoint's stall, however short). "snapshot" answers
 * "snapshot N us ID": one ckpt_snapshot() from inside.
 * fill_idle MIB CHILDREN: a tree (the tree snapshot benchmark): first
 * CHILDREN children are forked, each filling MIB MiB of its own and
 * waiting on a pipe from the parent until it closes (the parent's end).
 * The benchmark times a restart until the first "pong" or "resumed" line,
 * and reads how long a checkpoint kept the process stopped.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ckpt.h"
#include "idle_loop.h"

static void say(const char *line)
{
	printf("%s\n", line);
	fflush(stdout);
}

static void fill(uint64_t *w, size_t words)
{
	uint64_t s = 0x243f6a8885a308d3ull;
	size_t i;

	for (i = 0; i < words; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		w[i] = s;
	}
}

struct memory {
	uint64_t *w;
	size_t words;
	char line[16];
	size_t len;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* One pass over all the memory, timed: "read N us" or "write N us". */
static void timed_pass(struct memory *m, int write)
{
	volatile uint64_t sink;
	uint64_t t0 = now_us(), sum = 0;
	size_t i;

	if (write)
		for (i = 0; i < m->words; i++)
			m->w[i] += 1;
	else
		for (i = 0; i < m->words; i++)
			sum += m->w[i];
	sink = sum;
	(void)sink;
	printf("%s %" PRIu64 " us\n", write ? "write" : "read",
	       now_us() - t0);
	fflush(stdout);
}

/* One word in 1% of the pages, at random: "dirtied N". */
static void dirty_pages(struct memory *m)
{
	static uint64_t s = 0x9e3779b97f4a7c15ull;
	size_t pages = m->words / 512, n = pages / 100, i;

	for (i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		m->w[(s % pages) * 512 + (s >> 40) % 512] ^= s;
	}
	printf("dirtied %zu\n", n);
	fflush(stdout);
}

/* The floor of a snapshot: one plain fork() of this process, the child
 * exiting at once: "fork N us" (the parent's time in fork()). */
static void timed_fork(void)
{
	uint64_t t0 = now_us(), t;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	t = now_us() - t0;
	if (pid > 0)
		waitpid(pid, NULL, 0);
	printf("fork %" PRIu64 " us\n", pid > 0 ? t : 0);
	fflush(stdout);
}

/* ckpt_snapshot() from inside (no tool, no connection of a tool's):
 * "snapshot N us ID", or "snapshot restored" in a process restored from
 * it, or "snapshot failed -ERRNO". */
static void timed_snapshot(void)
{
	uint64_t t0 = now_us(), id = 0;
	int r = ckpt_snapshot(&id);
	uint64_t t = now_us() - t0;

	if (r == CKPT_CONTINUING)
		printf("snapshot %" PRIu64 " us %" PRIu64 "\n", t, id);
	else if (r == CKPT_RESTARTED)
		printf("snapshot restored\n");
	else
		printf("snapshot failed %d\n", r);
	fflush(stdout);
}

static void answer_line(struct memory *m, unsigned long *pongs)
{
	if (!strcmp(m->line, "snapshot")) {
		timed_snapshot();
		return;
	}
	if (!strcmp(m->line, "fork")) {
		timed_fork();
		return;
	}
	if (!strcmp(m->line, "gap")) {
		idle_answer_gap();
		return;
	}
	if (!strcmp(m->line, "dirty")) {
		dirty_pages(m);
		return;
	}
	if (!strcmp(m->line, "read") || !strcmp(m->line, "write")) {
		timed_pass(m, m->line[0] == 'w');
		return;
	}
	printf("pong %lu\n", ++*pongs);
	fflush(stdout);
}

/* Answer pings and passes; returns 0 when stdin is gone (EOF, error). */
static int answer_pings(void *arg, unsigned long *pongs)
{
	struct memory *m = arg;
	char buf[256];
	ssize_t n = read(0, buf, sizeof(buf));
	ssize_t i;

	if (n < 0 && errno == EINTR)
		return 1;
	if (n <= 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			m->line[m->len] = 0;
			answer_line(m, pongs);
			m->len = 0;
		} else if (m->len < sizeof(m->line) - 1) {
			m->line[m->len++] = buf[i];
		}
	}
	return 1;
}

static uint64_t *filled(unsigned long mib)
{
	uint64_t *mem = malloc(mib << 20);

	if (!mem) {
		fprintf(stderr, "fill_idle: %lu MiB: out of memory\n", mib);
		exit(2);
	}
	fill(mem, (mib << 20) / sizeof(*mem));
	return mem;
}

/* A child of the tree: its own memory, then it waits for the parent's
 * end of the pipe to close. */
static void child_waits(int rfd, unsigned long mib)
{
	char c;

	filled(mib);
	while (read(rfd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

static void fork_children(const char *arg, unsigned long mib)
{
	unsigned long n = strtoul(arg, NULL, 10);

	for (unsigned long i = 0; i < n && i < 64; i++) {
		int p[2];
		pid_t pid;

		if (pipe(p) < 0 || (pid = fork()) < 0) {
			perror("fill_idle: a child");
			exit(2);
		}
		if (pid == 0) {
			close(p[1]);
			child_waits(p[0], mib);
		}
		close(p[0]);	/* p[1] stays: the child's lifeline */
	}
}

int main(int argc, char **argv)
{
	static struct memory m;
	unsigned long mib;
	uint64_t *mem;
	char *end;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: fill_idle MIB [CHILDREN]\n");
		return 2;
	}
	mib = strtoul(argv[1], &end, 10);
	if (*end || !mib) {
		fprintf(stderr, "fill_idle: MIB '%s': not a positive number\n",
			argv[1]);
		return 2;
	}
	if (argc == 3)
		fork_children(argv[2], mib);
	mem = filled(mib);
	m.w = mem;
	m.words = (mib << 20) / sizeof(*mem);
	say("ready");
	idle_answering(answer_pings, &m);
}
