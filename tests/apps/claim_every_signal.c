/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * claim_every_signal ITER: install a handler on every real-time signal,
 * from SIGRTMAX down, and print "claimed N refused LIST" (LIST: the
 * signals sigaction refused, with errno, or "none"). Then ITER times
 * raise every claimed signal, checking each arrives, and print "iter K";
 * at the end "delivered D".
 */
#include <signal.h>
#include "app_util.h"

#define PROG "claim_every_signal"

static volatile sig_atomic_t delivered;

static void on_signal(int sig)
{
	(void)sig;
	delivered++;
}

int main(int argc, char **argv)
{
	int claimed[65], n = 0;
	char refused[256] = "none";
	size_t used = 0;
	unsigned long iter;
	struct sigaction sa;

	if (argc != 2)
		die(PROG, "usage: claim_every_signal ITER");
	iter = parse_ulong(PROG, "ITER", argv[1], 1, 100000);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	for (int sig = SIGRTMAX; sig >= SIGRTMIN; sig--) {
		if (sigaction(sig, &sa, NULL) == 0)
			claimed[n++] = sig;
		else
			used += snprintf(refused + used, sizeof(refused) - used,
					 "%s%d:%s", used ? "," : "", sig,
					 strerror(errno));
	}
	say("claimed %d refused %s", n, refused);
	for (unsigned long k = 1; k <= iter; k++) {
		for (int i = 0; i < n; i++) {
			int before = delivered;

			raise(claimed[i]);
			expect_eq("raise", "delivered", delivered, before + 1);
		}
		say("iter %lu", k);
		sleep_ms(20);
	}
	say("delivered %d", (int)delivered);
	return 0;
}
