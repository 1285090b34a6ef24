/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * brk_grow STEPS PAUSE_MS: grows the heap through malloc (small blocks
 * come from glibc's main arena, which grows with brk) and checks after
 * every step that the program break never went back and that every block
 * lies between the start of [heap] (read from /proc/self/maps at start)
 * and the current break: the heap stayed one contiguous piece. Prints "step K brk +OFFSET" and at
 * the end "contiguous yes" (or "contiguous no at step K").
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
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[heap]"))
			sscanf(line, "%lx-", &lo);
	fclose(f);
	if (!lo)
		die(PROG, "no [heap] in /proc/self/maps");
	return (char *)lo;
}

int main(int argc, char **argv)
{
	unsigned long steps, pause_ms, k, bad = 0;
	char *start, *prev, *now;

	if (argc != 3)
		die(PROG, "usage: brk_grow STEPS PAUSE_MS");
	steps = parse_ulong(PROG, "STEPS", argv[1], 1, 100000);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[2], 0, 10000);
	free(malloc(1));	/* make sure the main arena exists */
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
