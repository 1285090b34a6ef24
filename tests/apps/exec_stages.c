/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exec_stages N1 N2: stage 1 counts to N1 ("s1 K pid P"), then execve's
 * itself with an environment of its own that lacks LD_PRELOAD and every
 * CKPT_ variable; stage 2 counts to N2 ("s2 K pid P") and ends with
 * "done pid P". A checkpointer must follow the exec (the new image is
 * still checkpointed) and keep the pid the program sees.
 */
#include "app_util.h"

#define PROG "exec_stages"

int main(int argc, char **argv)
{
	char *env[] = { "PATH=/usr/bin:/bin", "STAGE=2", NULL };
	unsigned long n1, n2, k;

	if (argc != 3)
		die(PROG, "usage: exec_stages N1 N2");
	n1 = parse_ulong(PROG, "N1", argv[1], 0, 100000);
	n2 = parse_ulong(PROG, "N2", argv[2], 1, 100000);
	if (!getenv("STAGE")) {
		for (k = 1; k <= n1; k++) {
			say("s1 %lu pid %d", k, (int)getpid());
			sleep_ms(50);
		}
		execve("/proc/self/exe", argv, env);
		die(PROG, "execve: %s", strerror(errno));
	}
	for (k = 1; k <= n2; k++) {
		say("s2 %lu pid %d preload %s", k, (int)getpid(),
		    getenv("LD_PRELOAD") ? "yes" : "no");
		sleep_ms(50);
	}
	say("done pid %d", (int)getpid());
	return 0;
}
