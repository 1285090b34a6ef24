/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * leaky N: allocates N blocks of 100 bytes and forgets them (a leak a
 * memory checker reports), prints "leaked N", exits 0.
 */
#include "app_util.h"

#define PROG "leaky"

int main(int argc, char **argv)
{
	unsigned long n, i;
	volatile char *p = NULL;

	if (argc != 2)
		die(PROG, "usage: leaky N");
	n = parse_ulong(PROG, "N", argv[1], 1, 1000000);
	for (i = 0; i < n; i++) {
		p = malloc(100);
		if (!p)
			die(PROG, "malloc: %s", strerror(errno));
		p[0] = (char)i;
	}
	p = NULL;
	say("leaked %lu", n);
	return 0;
}
