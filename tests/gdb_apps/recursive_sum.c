// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A recursive function to walk back through with ckpt reverse-step,
 * reverse-next and reverse-finish (tests/test_gdb_reverse.py): the lines
 * shown going back must be those gdb showed going forward.
 */
#include <stdio.h>

long calls;

long sum_to(int n)
{
	long here = n * 10;			/* line: here */

	calls++;
	if (n == 0)
		return 0;			/* line: base case */
	long below = sum_to(n - 1);		/* line: recursive call */

	return here + below;			/* line: after the call */
}

int main(void)
{
	long total = 0;

	for (int round = 0; round < 2; round++) {
		total += sum_to(3);		/* line: main's call */
		printf("round %d total %ld calls %ld\n", round, total, calls);
	}
	return 0;
}
