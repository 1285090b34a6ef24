// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Each step calls left() or right() as `mode` says: a debugger that sets
 * mode after a snapshot makes a re-execution from it take another path,
 * which the gdb extension must report as a divergence
 * (tests/test_gdb_reverse.py).
 */
#include <stdio.h>

int mode;

void progress(int i)
{
	__asm__ __volatile__("" : : "r"(i) : "memory");
}

void left(int i)
{
	printf("left %d\n", i);
}

void right(int i)
{
	printf("right %d\n", i);
}

int main(void)
{
	for (int i = 0; i < 4; i++) {
		progress(i);
		if (mode)
			left(i);
		else
			right(i);
	}
	return 0;
}
