/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small helpers shared by the test programs. Header-only on purpose: each
 * test program is one self-contained binary (tests/build.mk compiles one
 * .c file per program).
 */
#ifndef CKPT_TEST_APP_UTIL_H
#define CKPT_TEST_APP_UTIL_H

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

/* Print one line to stdout and flush it at once: the test reads progress
 * through a pipe and must see every line when it is printed. */
static inline void say(const char *fmt, ...)
{
	va_list ap;

	/* One lock around the whole line: threads that wake together (as
	 * after a restart) must not interleave their lines. */
	flockfile(stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	funlockfile(stdout);
}

static inline void die(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* A value the program checks: a mismatch is one "FAIL" line, exit 1. */
static inline void expect_eq(const char *who, const char *what, long got,
			     long want)
{
	if (got != want) {
		say("FAIL %s: %s: got %ld, want %ld", who, what, got, want);
		exit(1);
	}
}

/* Parse a decimal argument in [min, max]; bad input ends the program. */
static inline unsigned long parse_ulong(const char *prog, const char *what,
					const char *s, unsigned long min,
					unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		die(prog, "%s '%s': not a number in [%lu, %lu]", what, s,
		    min, max);
	return v;
}

/* Sleep, resuming after signals: a checkpoint may interrupt the sleep. */
static inline void sleep_ms(unsigned long ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000L,
	};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static inline uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static inline uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

#define FNV1A_INIT 0xcbf29ce484222325ull

/* Wait for the child of round `round` by the pid the program was given
 * and check that it exited with `want`: 0, or 1 after one "FAIL" line. */
static inline int reap_round_child(unsigned long round, pid_t pid, int want)
{
	int status = 0;
	pid_t r = waitpid(pid, &status, 0);

	if (r == pid && WIFEXITED(status) && WEXITSTATUS(status) == want)
		return 0;
	say("FAIL round %lu: waitpid(%d) = %d (%s), status %#x", round,
	    (int)pid, (int)r, r < 0 ? strerror(errno) : "", status);
	return 1;
}

#endif /* CKPT_TEST_APP_UTIL_H */
