/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * offset_pipe_steps INPUT STEPS SLEEP_MS: state the kernel holds, not
 * memory. Each step reads 3 bytes of INPUT (its file offset moves on),
 * takes one byte off a pipe to itself that always holds 16 queued bytes
 * and puts a new one in, and adds 1 to an eventfd whose counter it reads
 * every 10 steps, and adds the bytes read to a sum kept in MAP_SHARED
 * anonymous memory; an interval timer (ITIMER_REAL, 1000 s, SIGALRM
 * ignored) stays armed all along. Prints "step N in=HEX pipe=HEX
 * offset=O events=E shared=S alarm=A": a restore that left an offset,
 * the pipe's queue, the counter or the shared memory as the replaced
 * process had moved them, or lost the timer, prints other lines.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include "app_util.h"

#define PROG "offset_pipe_steps"
#define QUEUED 16

static void put_byte(int fd, unsigned char b)
{
	if (write(fd, &b, 1) != 1)
		die(PROG, "write to the pipe: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	unsigned long steps, sleep_arg;
	uint64_t events = 0, *shared;
	int in, p[2], ev;

	if (argc < 4)
		die(PROG, "usage: offset_pipe_steps INPUT STEPS SLEEP_MS");
	steps = parse_ulong(PROG, "STEPS", argv[2], 1, 1000000);
	sleep_arg = parse_ulong(PROG, "SLEEP_MS", argv[3], 0, 10000);
	in = open(argv[1], O_RDONLY);
	ev = eventfd(0, 0);
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (in < 0 || ev < 0 || pipe(p) < 0 || shared == MAP_FAILED)
		die(PROG, "open %s, eventfd or pipe: %s", argv[1],
		    strerror(errno));
	signal(SIGALRM, SIG_IGN);
	if (setitimer(ITIMER_REAL, &(struct itimerval){ .it_value = {
			      .tv_sec = 1000 } }, NULL) < 0)
		die(PROG, "setitimer: %s", strerror(errno));
	for (int i = 0; i < QUEUED; i++)
		put_byte(p[1], (unsigned char)(i * 37 + 1));
	for (unsigned long step = 1; step <= steps; step++) {
		unsigned char b[3], got;
		uint64_t one = 1, v;
		struct itimerval left;

		if (read(in, b, 3) != 3 || read(p[0], &got, 1) != 1)
			die(PROG, "step %lu: read: %s", step, strerror(errno));
		put_byte(p[1], (unsigned char)(got * 5 + b[0] + step));
		*shared += b[0] + b[1] + b[2];
		if (write(ev, &one, sizeof(one)) != sizeof(one))
			die(PROG, "eventfd write: %s", strerror(errno));
		if (step % 10 == 0) {
			if (read(ev, &v, sizeof(v)) != sizeof(v))
				die(PROG, "eventfd read: %s", strerror(errno));
			events += v;
		}
		getitimer(ITIMER_REAL, &left);
		say("step %lu in=%02x%02x%02x pipe=%02x offset=%lld "
		    "events=%llu shared=%llu alarm=%d", step, b[0], b[1], b[2],
		    got, (long long)lseek(in, 0, SEEK_CUR),
		    (unsigned long long)events, (unsigned long long)*shared,
		    left.it_value.tv_sec > 0);
		if (sleep_arg)
			sleep_ms(sleep_arg);
	}
	say("done %lu", steps);
	return 0;
}
