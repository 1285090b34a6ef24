// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A ledger whose balance stays at 100 until one step takes out far more
 * than it put in; the program runs on, a millisecond a step. tests/test_gdb_bisect.py asks `ckpt bisect` for
 * the first moment the invariant is false. Usage: ledger [STEPS]
 */
#include <stdlib.h>
#include <unistd.h>

struct ledger {
	long balance;		/* never below 0: deposits come first */
	long deposits;
	long withdrawals;
} book;

long bad_step = -1;

/* tests/test_gdb_bisect.py breaks here every 100 steps */
void progress(long step)
{
	__asm__ __volatile__("" : : "r"(step) : "memory");
}

void finished(void)
{
	__asm__ __volatile__("" : : : "memory");
}

/* a deposit, then the same amount out again; one step takes out far
 * more than it put in */
static void apply(long step, long amount)
{
	book.deposits += amount;
	book.balance += amount;
	if (step * 7919 % 3001 == 1234) {
		bad_step = step;
		amount *= 1000;			/* the bad withdrawal */
	}
	book.withdrawals += amount;
	book.balance -= amount;
}

int main(int argc, char **argv)
{
	long steps = argc > 1 ? atol(argv[1]) : 2000;

	book.balance = 100;

	for (long step = 0; step < steps; step++) {
		apply(step, step % 17 + 1);
		progress(step);
		usleep(1000);
	}
	finished();
	return 0;
}
