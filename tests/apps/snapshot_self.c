/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * snapshot_self N AT PAUSE_MS: count to N ("count K"), sleeping PAUSE_MS
 * after each step; after step AT take a snapshot of itself with
 * ckpt_snapshot() (include/ckpt.h) and print "snapshot ID", or, in a
 * process restored from it, "restored". Without ckpt: "no snapshot:
 * ERRNO". At the end "done N".
 */
#include "ckpt.h"
#include "app_util.h"

#define PROG "snapshot_self"

int main(int argc, char **argv)
{
	unsigned long n, at, pause_ms;
	uint64_t id = 0;
	int r;

	if (argc != 4)
		die(PROG, "usage: snapshot_self N AT PAUSE_MS");
	n = parse_ulong(PROG, "N", argv[1], 1, 1UL << 30);
	at = parse_ulong(PROG, "AT", argv[2], 1, n);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[3], 0, 60000);
	for (unsigned long k = 1; k <= n; k++) {
		say("count %lu", k);
		if (k == at) {
			r = ckpt_snapshot(&id);
			if (r == CKPT_RESTARTED)
				say("restored");
			else if (r == CKPT_CONTINUING)
				say("snapshot %llu", (unsigned long long)id);
			else
				say("no snapshot: %d", -r);
		}
		sleep_ms(pause_ms);
	}
	say("done %lu", n);
	return 0;
}
