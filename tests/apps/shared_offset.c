/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shared_offset FILE TURNS DELAY_MS: a parent and its forked child write
 * through one inherited fd (one open file description, one offset, no
 * O_APPEND), taking turns over a pair of pipes: the parent writes
 * "P%06lu\n", the child "C%06lu\n". Before each write the writer checks
 * that the shared offset is where the other left it; if the two had
 * separate offsets the child would overwrite the parent's records.
 * The parent prints "turn I", at the end checks the whole file and prints
 * "OK shared <bytes>".
 */
#include <fcntl.h>
#include <sys/wait.h>
#include "app_util.h"

#define REC 8

static void check_offset(int fd, const char *who, off_t want)
{
	off_t at = lseek(fd, 0, SEEK_CUR);

	if (at != want) {
		say("FAIL %s: offset %lld, want %lld", who, (long long)at,
		    (long long)want);
		exit(1);
	}
}

static void put(int fd, char tag, unsigned long i)
{
	char rec[32];

	snprintf(rec, sizeof(rec), "%c%06lu\n", tag, i);
	if (write(fd, rec, REC) != REC)
		die("shared_offset", "write: %s", strerror(errno));
}

static void pass_turn(int out)
{
	while (write(out, "x", 1) != 1)
		if (errno != EINTR)
			die("shared_offset", "turn write: %s", strerror(errno));
}

static int take_turn(int in)
{
	char c;
	ssize_t n;

	while ((n = read(in, &c, 1)) < 0 && errno == EINTR)
		;
	return n == 1;
}

static void check_file(int fd, unsigned long turns)
{
	char rec[REC], want[32];

	for (unsigned long i = 0; i < 2 * turns; i++) {
		if (pread(fd, rec, REC, i * REC) != REC)
			die("shared_offset", "short file at record %lu", i);
		snprintf(want, sizeof(want), "%c%06lu\n", i % 2 ? 'C' : 'P',
			 i / 2 + 1);
		if (memcmp(rec, want, REC)) {
			say("FAIL record %lu is %.7s, want %.7s", i, rec, want);
			exit(1);
		}
	}
}

int main(int argc, char **argv)
{
	int fd, ping[2], pong[2], status;
	unsigned long turns, delay;
	pid_t child;

	if (argc != 4)
		die("shared_offset", "usage: shared_offset FILE TURNS DELAY_MS");
	turns = parse_ulong("shared_offset", "TURNS", argv[2], 1, 100000);
	delay = parse_ulong("shared_offset", "DELAY_MS", argv[3], 0, 10000);
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || pipe(ping) < 0 || pipe(pong) < 0)
		die("shared_offset", "%s: %s", argv[1], strerror(errno));
	fflush(stdout);
	child = fork();
	if (child < 0)
		die("shared_offset", "fork: %s", strerror(errno));
	if (child == 0) {
		close(ping[1]);
		close(pong[0]);
		for (unsigned long i = 1; take_turn(ping[0]); i++) {
			check_offset(fd, "child", (2 * i - 1) * REC);
			put(fd, 'C', i);
			pass_turn(pong[1]);
		}
		exit(0);
	}
	close(ping[0]);
	close(pong[1]);
	say("start");
	for (unsigned long i = 1; i <= turns; i++) {
		check_offset(fd, "parent", (2 * i - 2) * REC);
		put(fd, 'P', i);
		pass_turn(ping[1]);
		if (!take_turn(pong[0]))
			die("shared_offset", "the child ended early");
		say("turn %lu", i);
		sleep_ms(delay);
	}
	close(ping[1]);
	if (waitpid(child, &status, 0) != child || status != 0)
		die("shared_offset", "child status %d", status);
	check_offset(fd, "parent", 2 * turns * REC);
	check_file(fd, turns);
	say("OK shared %lu", 2 * turns * REC);
	return 0;
}
