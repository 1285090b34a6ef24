/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fill_idle MIB: the benchmark's process. Fill MIB MiB with random data,
 * print "ready", then idle: answer every line read on stdin with
 * "pong N", and print "resumed after N ms" whenever a 1 ms sleep took
 * longer than 20 ms (the process was stopped: a checkpoint, or a restart).
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
#include <unistd.h>
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

/* Answer pings; returns 0 when stdin is gone (EOF or error). */
static int answer_pings(void *unused, unsigned long *pongs)
{
	char buf[256];
	ssize_t n = read(0, buf, sizeof(buf));
	ssize_t i;

	(void)unused;

	if (n < 0 && errno == EINTR)
		return 1;
	if (n <= 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			printf("pong %lu\n", ++*pongs);
			fflush(stdout);
		}
	}
	return 1;
}

int main(int argc, char **argv)
{
	unsigned long mib;
	uint64_t *mem;
	char *end;

	if (argc != 2) {
		fprintf(stderr, "usage: fill_idle MIB\n");
		return 2;
	}
	mib = strtoul(argv[1], &end, 10);
	if (*end || !mib) {
		fprintf(stderr, "fill_idle: MIB '%s': not a positive number\n",
			argv[1]);
		return 2;
	}
	mem = malloc(mib << 20);
	if (!mem) {
		fprintf(stderr, "fill_idle: %lu MiB: out of memory\n", mib);
		return 2;
	}
	fill(mem, (mib << 20) / sizeof(*mem));
	say("ready");
	idle_answering(answer_pings, NULL);
}
