// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Reads a line from stdin (a FIFO the test feeds once), the time and
 * random bytes, between two calls of progress(): a re-execution from a
 * snapshot taken at the first must see the same values
 * (tests/test_gdb_reverse.py, wrappers/record_inputs.c).
 */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

char line[64];
struct timespec when;
unsigned long long dice;
long long now;

void progress(int i)
{
	__asm__ __volatile__("" : : "r"(i) : "memory");
}

int main(void)
{
	ssize_t n;

	progress(0);
	n = read(0, line, sizeof(line) - 1);
	line[n > 0 ? n : 0] = 0;
	clock_gettime(CLOCK_REALTIME, &when);
	if (getrandom(&dice, sizeof(dice), 0) != sizeof(dice))
		return 1;
	now = (long long)time(NULL);
	progress(1);
	printf("%s %lld.%09ld %llu %lld\n", strtok(line, "\n"), (long long)when.tv_sec,
	       when.tv_nsec, dice, now);
	return 0;
}
