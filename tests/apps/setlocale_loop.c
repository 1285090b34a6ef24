/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * setlocale_loop ROUNDS: switch the locale back and forth without pause
 * (glibc holds its internal __libc_setlocale_lock, a rwlock that records
 * its writer's thread id, for most of each call), printing "round K"
 * after every 2000 switches and "done" at the end. A checkpoint almost
 * always stops the thread inside setlocale with that lock write-held.
 */
#include <locale.h>
#include "app_util.h"

int main(int argc, char **argv)
{
	unsigned long rounds;

	if (argc != 2)
		die(argv[0], "usage: setlocale_loop ROUNDS");
	rounds = parse_ulong(argv[0], "ROUNDS", argv[1], 1, 1000000);
	for (unsigned long k = 1; k <= rounds; k++) {
		for (int i = 0; i < 2000; i++)
			if (!setlocale(LC_ALL, i % 2 ? "C.UTF-8" : "C"))
				die(argv[0], "setlocale failed at round %lu",
				    k);
		say("round %lu", k);
	}
	say("done");
	return 0;
}
