/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * brk_grow STEPS PAUSE_MS [fork]: grows the heap through malloc (small
 * blocks come from glibc's main arena, which grows with brk) and checks
 * after every step that the program break never went back and that every
 * block lies between the start of [heap] (read from /proc/self/maps at
 * start) and the current break: the heap stayed one contiguous piece.
 * Prints "step K brk +OFFSET" and at the end "contiguous yes" (or
 * "contiguous no at step K"). With "fork", a child forked after the first
 * allocations does the growing (the kernel then lists its heap as two
 * [heap] areas: the inherited part and the part grown after the fork)
 * while the parent waits for it and exits with its status.
 */
#include "app_util.h"

#define PROG "brk_grow"

static char *heap_start(void)
{
	char line[512];
	unsigned long lo = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		die(PROG, "/proc/self/maps: %s", strerror(errno));
	while (!lo && fgets(line, sizeof(line), f))
		if (strstr(line, "[heap]"))
			sscanf(line, "%lx-", &lo);
	fclose(f);
	if (!lo)
		die(PROG, "no [heap] in /proc/self/maps");
	return (char *)lo;
}

/* In the parent: wait for the child and exit with its status. */
static void wait_forked_child(void)
{
	int status;
	pid_t pid;

	for (int i = 0; i < 64; i++)
		memset(malloc(1000), 1, 1000);	/* heap the child inherits */
	pid = fork();
	if (pid < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (pid == 0)
		return;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die(PROG, "waitpid: %s", strerror(errno));
	exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

int main(int argc, char **argv)
{
	unsigned long steps, pause_ms, k, bad = 0;
	char *start, *prev, *now;

	if (argc != 3 && (argc != 4 || strcmp(argv[3], "fork")))
		die(PROG, "usage: brk_grow STEPS PAUSE_MS [fork]");
	steps = parse_ulong(PROG, "STEPS", argv[1], 1, 100000);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[2], 0, 10000);
	free(malloc(1));	/* make sure the main arena exists */
	if (argc == 4)
		wait_forked_child();
	start = heap_start();
	prev = sbrk(0);
	for (k = 1; k <= steps; k++) {
		for (int i = 0; i < 64; i++) {
			char *p = malloc(1000);

			if (!p)
				die(PROG, "malloc failed at step %lu", k);
			memset(p, (int)k, 1000);
			now = sbrk(0);
			if (!bad && (p < start || p + 1000 > now || now < prev))
				bad = k;
			prev = now;
		}
		say("step %lu brk +%ld", k, (long)((char *)sbrk(0) - start));
		sleep_ms(pause_ms);
	}
	if (bad)
		say("contiguous no at step %lu", bad);
	else
		say("contiguous yes");
	return 0;
}
