/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shm_ledger LIMIT MIB: two children add 1 to a counter in memory shared
 * with their parent and 1 to a count of their own (private memory) at
 * every step, until the shared counter reaches LIMIT; the parent, made
 * big after the fork (MIB MiB of touched heap, so its image takes longest
 * to write), prints "progress K" every 50 ms and at the end "total T sum
 * S", S being the children's own counts added up. T == S only if every
 * image of a checkpoint saw the shared counter at the same moment as the
 * private counts: a child that ran again while its parent was still
 * saving would move the shared counter in the parent's image.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "shm_ledger"
#define CHILDREN 2

struct ledger {
	long total;			/* atomic */
	long own[CHILDREN];		/* each child's count, at its end */
};

static volatile long own_steps;		/* private to each child */

static void __attribute__((noreturn)) child(struct ledger *l, long limit,
					    int me)
{
	while (__atomic_load_n(&l->total, __ATOMIC_RELAXED) < limit) {
		own_steps++;
		__atomic_fetch_add(&l->total, 1, __ATOMIC_RELAXED);
		if (own_steps % 200 == 0)
			sleep_ms(1);
	}
	l->own[me] = own_steps;
	_exit(0);
}

int main(int argc, char **argv)
{
	struct ledger *l;
	long limit, sum = 0;
	size_t big;
	char *heap;
	int status, bad = 0;

	if (argc != 3)
		die(PROG, "usage: shm_ledger LIMIT MIB");
	limit = (long)parse_ulong(PROG, "LIMIT", argv[1], 1, 1L << 40);
	big = parse_ulong(PROG, "MIB", argv[2], 0, 4096) << 20;
	l = mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (l == MAP_FAILED)
		die(PROG, "shared page: %s", strerror(errno));
	for (int c = 0; c < CHILDREN; c++) {
		pid_t pid = fork();

		if (pid < 0)
			die(PROG, "fork: %s", strerror(errno));
		if (pid == 0)
			child(l, limit, c);
	}
	heap = malloc(big ? big : 1);
	if (!heap)
		die(PROG, "malloc %zu: out of memory", big);
	for (size_t i = 0; i < big; i += 4096)
		heap[i] = (char)(i >> 12 | 1);
	while (__atomic_load_n(&l->total, __ATOMIC_RELAXED) < limit) {
		say("progress %ld", __atomic_load_n(&l->total,
						    __ATOMIC_RELAXED));
		sleep_ms(50);
	}
	for (int c = 0; c < CHILDREN; c++)
		if (wait(&status) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			bad++;
	for (int c = 0; c < CHILDREN; c++)
		sum += l->own[c];
	say("total %ld sum %ld bad_children %d", l->total, sum, bad);
	return bad != 0;
}
