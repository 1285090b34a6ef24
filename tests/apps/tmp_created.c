/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tmp_created ROUNDS PAUSE_MS DIR: temporary files made, closed, and read
 * back later, the way a compiler driver hands /tmp/ccXXXXXX.s from cc1 to
 * as, or sort keeps its runs.
 *
 * Round N makes a file in DIR (odd N) or in $TMPDIR (even N): with
 * mkstemps ("tcXXXXXX.txt") or, when N is a multiple of 3, with
 * open(O_CREAT|O_EXCL) ("excl.N"). It writes 200 numbers derived from N,
 * closes the file, prints "made N", sleeps PAUSE_MS, reopens the file,
 * checks every number, unlinks it, prints "checked N sum S" and sleeps
 * PAUSE_MS again (a test kills the run then, before round N+1). At the
 * end: "done ROUNDS total T". No process has the file open between
 * "made N" and "checked N".
 */
#include <fcntl.h>
#include <limits.h>
#include "app_util.h"

#define PROG "tmp_created"
#define NUMBERS 200

static uint64_t value(unsigned long round, int k)
{
	return mix64(round * 1000 + k);
}

static int make_file(unsigned long round, const char *dir, char *path)
{
	int fd;

	if (round % 3 == 0) {
		snprintf(path, PATH_MAX, "%s/excl.%lu", dir, round);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	} else {
		snprintf(path, PATH_MAX, "%s/tcXXXXXX.txt", dir);
		fd = mkstemps(path, 4);
	}
	if (fd < 0)
		die(PROG, "round %lu: creating a file in %s: %s", round, dir,
		    strerror(errno));
	return fd;
}

static void write_numbers(unsigned long round, int fd, const char *path)
{
	FILE *f = fdopen(fd, "w");

	if (!f)
		die(PROG, "fdopen %s: %s", path, strerror(errno));
	for (int k = 0; k < NUMBERS; k++)
		fprintf(f, "%llu\n", (unsigned long long)value(round, k));
	if (fclose(f) != 0)
		die(PROG, "writing %s: %s", path, strerror(errno));
}

static uint64_t check_numbers(unsigned long round, const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long v;
	uint64_t sum = 0;
	int k = 0;

	if (!f)
		die(PROG, "round %lu: reopening %s: %s", round, path,
		    strerror(errno));
	while (fscanf(f, "%llu", &v) == 1) {
		if (k >= NUMBERS || v != value(round, k))
			die(PROG, "round %lu: %s: number %d is %llu", round,
			    path, k, v);
		sum += v;
		k++;
	}
	fclose(f);
	if (k != NUMBERS)
		die(PROG, "round %lu: %s holds %d numbers, not %d", round,
		    path, k, NUMBERS);
	return sum;
}

int main(int argc, char **argv)
{
	unsigned long rounds, pause_ms;
	const char *tmpdir = getenv("TMPDIR");
	char path[PATH_MAX];
	uint64_t total = 0, sum;

	if (argc != 4)
		die(PROG, "usage: tmp_created ROUNDS PAUSE_MS DIR");
	rounds = parse_ulong(PROG, "ROUNDS", argv[1], 1, 100000);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[2], 0, 60000);
	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	for (unsigned long n = 1; n <= rounds; n++) {
		write_numbers(n, make_file(n, n % 2 ? argv[3] : tmpdir, path),
			      path);
		say("made %lu", n);
		sleep_ms(pause_ms);
		sum = check_numbers(n, path);
		if (unlink(path) < 0)
			die(PROG, "unlink %s: %s", path, strerror(errno));
		total += sum;
		say("checked %lu sum %llu", n, (unsigned long long)sum);
		sleep_ms(pause_ms);
	}
	say("done %lu total %llu", rounds, (unsigned long long)total);
	return 0;
}
