/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * uring_worker N PAUSE_MS: set up an io_uring (raw system calls, as
 * liburing makes them), submit one read of an empty pipe with IOSQE_ASYNC,
 * so that one of io_uring's io-wq worker threads (iou-wrk-PID, a task of
 * this process that only the kernel runs) blocks in it, say "uring worker"
 * once that thread shows in /proc/self/task, then count from 1 to N
 * printing "count K SUM" and sleeping PAUSE_MS, and print "done N SUM".
 * The ring is not used again. Exit 3 when io_uring is not available.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "app_util.h"

#define PROG "uring_worker"

static int worker_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		die(PROG, "opendir /proc/self/task: %s", strerror(errno));
	while ((e = readdir(d))) {
		char path[300], comm[64] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, "iou-wrk-", 8))
			n++;
		if (f)
			fclose(f);
	}
	closedir(d);
	return n;
}

static void submit_blocking_read(int pipe_rd, char *buf)
{
	struct io_uring_params p;
	struct io_uring_sqe *sqes;
	unsigned *tail, *array, mask;
	char *sq;
	int ring;

	memset(&p, 0, sizeof(p));
	ring = (int)syscall(__NR_io_uring_setup, 4, &p);
	if (ring < 0) {
		fprintf(stderr, "%s: io_uring_setup: %s\n", PROG,
			strerror(errno));
		exit(3);
	}
	sq = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof(unsigned),
		  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
		  IORING_OFF_SQ_RING);
	sqes = mmap(NULL, p.sq_entries * sizeof(*sqes),
		    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
		    IORING_OFF_SQES);
	if (sq == MAP_FAILED || sqes == MAP_FAILED)
		die(PROG, "mmap of the ring: %s", strerror(errno));
	tail = (unsigned *)(sq + p.sq_off.tail);
	array = (unsigned *)(sq + p.sq_off.array);
	mask = *(unsigned *)(sq + p.sq_off.ring_mask);
	memset(&sqes[0], 0, sizeof(sqes[0]));
	sqes[0].opcode = IORING_OP_READ;
	sqes[0].fd = pipe_rd;
	sqes[0].addr = (uintptr_t)buf;
	sqes[0].len = 1;
	sqes[0].flags = IOSQE_ASYNC;	/* to an io-wq worker */
	array[*tail & mask] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, ring, 1, 0, 0, NULL, 0) != 1)
		die(PROG, "io_uring_enter: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	static char buf[1];
	unsigned long n, pause_ms;
	uint64_t sum = 0;
	int fds[2], tries;

	if (argc != 3)
		die(PROG, "usage: %s N PAUSE_MS", PROG);
	n = strtoul(argv[1], NULL, 10);
	pause_ms = strtoul(argv[2], NULL, 10);
	if (pipe(fds) < 0)
		die(PROG, "pipe: %s", strerror(errno));
	submit_blocking_read(fds[0], buf);
	for (tries = 0; tries < 500 && !worker_threads(); tries++)
		sleep_ms(10);
	if (!worker_threads())
		die(PROG, "no iou-wrk thread appeared within 5 s");
	say("uring worker");
	for (unsigned long k = 1; k <= n; k++) {
		sum = sum * 31 + k;
		say("count %lu %" PRIu64, k, sum);
		sleep_ms(pause_ms);
	}
	say("done %lu %" PRIu64, n, sum);
	return 0;
}
