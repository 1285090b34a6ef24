// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A linked list one step of which corrupts a link, at a step that looks
 * random but is always the same; the program crashes later, when it walks
 * the list. tests/test_gdb_reverse.py asks `ckpt reverse-watch` for the
 * line and step that wrote the bad link. Usage: list_corruption [STEPS]
 */
#include <stdio.h>
#include <stdlib.h>

#define NODES 64

struct node {
	long value;
	struct node *next;
};

struct node nodes[NODES];

/* tests/test_gdb_reverse.py breaks here every 50 steps */
void progress(int step)
{
	__asm__ __volatile__("" : : "r"(step) : "memory");
}

static long walk(void)
{
	long sum = 0;

	for (struct node *n = &nodes[0]; n; n = n->next)
		sum += n->value;
	return sum;
}

static void update(int step)
{
	struct node *n = &nodes[(step * 7919) % NODES];

	n->value += step;
	if ((step * 2654435761u) % 1000 == 191)
		n->next = (struct node *)0x10;	/* the bad write */
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 600;

	for (int i = 0; i < NODES; i++)
		nodes[i].next = i + 1 < NODES ? &nodes[i + 1] : NULL;
	for (int step = 1; step <= steps; step++) {
		if (step % 50 == 0)
			progress(step);
		update(step);
		if (step % 100 == 0)
			printf("step %d sum %ld\n", step, walk());
	}
	printf("done\n");
	return 0;
}
