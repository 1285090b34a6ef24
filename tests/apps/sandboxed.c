/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sandboxed ROUNDS: a program that confines itself as sandboxes do (man,
 * file, openssh's privilege separation): it sets no_new_privs and installs
 * a seccomp filter (one that allows everything), then prints "round K"
 * every 50 ms and "done" at the end. Each round checks that no_new_privs
 * is still set (FAIL if not) and prints the thread's seccomp mode from
 * /proc/self/status ("seccomp M" once at the start and whenever it
 * changes).
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include "app_util.h"

#define PROG "sandboxed"

static int seccomp_mode(void)
{
	char line[256];
	FILE *f = fopen("/proc/thread-self/status", "r");
	int mode = -1;

	if (!f)
		die(PROG, "open /proc/thread-self/status: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Seccomp:", 8))
			mode = atoi(line + 8);
	fclose(f);
	return mode;
}

int main(int argc, char **argv)
{
	struct sock_filter allow[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 1, .filter = allow };
	unsigned long rounds;
	int mode, last = -2;

	if (argc != 2)
		die(PROG, "usage: sandboxed ROUNDS");
	rounds = parse_ulong(PROG, "ROUNDS", argv[1], 1, 1000000);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die(PROG, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		die(PROG, "PR_SET_SECCOMP: %s", strerror(errno));
	for (unsigned long k = 1; k <= rounds; k++) {
		if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
			die(PROG, "FAIL: no_new_privs lost at round %lu", k);
		mode = seccomp_mode();
		if (mode != last)
			say("seccomp %d", mode);
		last = mode;
		say("round %lu", k);
		sleep_ms(50);
	}
	say("done");
	return 0;
}
