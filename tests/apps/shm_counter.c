/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shm_counter N: a parent maps one shared anonymous page holding a
 * process-shared semaphore and a counter, and forks 3 children that take
 * turns: sem_wait, counter += 1 (held for 2 ms, so the semaphore is often
 * held at a checkpoint), record who made that step, sem_post, until the
 * counter reaches N. The parent prints "progress K" every 50 ms, then,
 * once the children are done, "total T steps S" where S counts the steps
 * recorded (each of 1..N by exactly one child): T == S == N when the
 * memory stayed one shared memory.
 */
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "shm_counter"
#define CHILDREN 3
#define MAX_N 100000

struct shared {
	sem_t lock;
	volatile long counter;
	unsigned char by[MAX_N + 1];	/* which child made step i (1-3) */
};

static void child(struct shared *s, long n, int me)
{
	for (;;) {
		while (sem_wait(&s->lock) < 0 && errno == EINTR)
			;
		if (s->counter >= n) {
			sem_post(&s->lock);
			_exit(0);
		}
		s->counter++;
		if (s->by[s->counter])
			_exit(3); /* a step made twice */
		s->by[s->counter] = (unsigned char)me;
		sleep_ms(2);
		sem_post(&s->lock);
	}
}

int main(int argc, char **argv)
{
	struct shared *s;
	long n, steps = 0;
	int status, bad = 0;

	if (argc != 2)
		die(PROG, "usage: shm_counter N");
	n = (long)parse_ulong(PROG, "N", argv[1], 1, MAX_N);
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED || sem_init(&s->lock, 1, 1) < 0)
		die(PROG, "shared page: %s", strerror(errno));
	for (int c = 1; c <= CHILDREN; c++) {
		pid_t pid = fork();

		if (pid < 0)
			die(PROG, "fork: %s", strerror(errno));
		if (pid == 0)
			child(s, n, c);
	}
	while (s->counter < n) {
		say("progress %ld", s->counter);
		sleep_ms(50);
	}
	for (int c = 0; c < CHILDREN; c++)
		if (wait(&status) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			bad++;
	for (long i = 1; i <= n; i++)
		steps += s->by[i] != 0;
	say("total %ld steps %ld bad_children %d", s->counter, steps, bad);
	return bad != 0;
}
