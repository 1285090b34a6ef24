// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Prints "i=N c=SUM" for N below the argument (default 40), a few ms
 * apart, with a function to break on per line: tests/test_gdb_reverse.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

long counter;

void progress(int i)
{
	__asm__ __volatile__("" : : "r"(i) : "memory");
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 40;

	for (int i = 0; i < n; i++) {
		counter += i;
		progress(i);
		printf("i=%d c=%ld\n", i, counter);
		fflush(stdout);
		usleep(5000);
	}
	return 0;
}
