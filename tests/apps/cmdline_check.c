/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmdline_check N PAUSE_MS TOKEN...: a process that names itself. Its main
 * thread renames itself "cmdline-main" (PR_SET_NAME), a second thread
 * "cmdline-worker"; each of N steps checks that /proc/self/cmdline is
 * exactly its argv, /proc/self/environ holds $CMDLINE_MARK and the main
 * thread still has its name (/proc/thread-self/comm; the worker checks
 * its own every pause), then prints "step K". A mismatch prints one "FAIL ..." line and exits 1. At the end
 * "done N".
 */
#include <pthread.h>
#include <sys/prctl.h>
#include "app_util.h"

#define PROG "cmdline_check"

static int worker_named;
static unsigned long pause_ms;

static void check_comm(const char *want);

/* Checks its own name every pause. */
static void *worker(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "cmdline-worker", 0, 0, 0);
	__atomic_store_n(&worker_named, 1, __ATOMIC_RELEASE);
	for (;;) {
		check_comm("cmdline-worker");
		sleep_ms(pause_ms);
	}
	return NULL;
}

/* Up to cap bytes of a /proc file; the length. */
static size_t read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		die(PROG, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

static void check_cmdline(int argc, char **argv)
{
	static char got[65536], want[65536];
	size_t n, len = 0;

	for (int i = 0; i < argc; i++) {
		size_t l = strlen(argv[i]) + 1;

		if (len + l > sizeof(want))
			die(PROG, "arguments too long");
		memcpy(want + len, argv[i], l);
		len += l;
	}
	n = read_file("/proc/self/cmdline", got, sizeof(got));
	if (n != len || memcmp(got, want, len)) {
		for (size_t i = 0; i + 1 < n; i++)
			got[i] = got[i] ? got[i] : ' ';
		say("FAIL cmdline: got '%.*s' (%zu bytes), want %zu bytes",
		    (int)(n ? n - 1 : 0), got, n, len);
		exit(1);
	}
}

static void check_environ(void)
{
	static char env[1 << 20];
	const char *mark = getenv("CMDLINE_MARK");
	char want[256];
	size_t n = read_file("/proc/self/environ", env, sizeof(env) - 1);

	if (!mark)
		die(PROG, "CMDLINE_MARK is not set");
	snprintf(want, sizeof(want), "CMDLINE_MARK=%s", mark);
	for (size_t off = 0; off < n; off += strlen(env + off) + 1)
		if (!strcmp(env + off, want))
			return;
	say("FAIL environ: %s is not in /proc/self/environ (%zu bytes)", want,
	    n);
	exit(1);
}

/* The calling thread's name, as the kernel shows it. */
static void check_comm(const char *want)
{
	char got[64];
	size_t n = read_file("/proc/thread-self/comm", got, sizeof(got) - 1);

	got[n] = 0;
	if (n && got[n - 1] == '\n')
		got[n - 1] = 0;
	if (strcmp(got, want)) {
		say("FAIL comm: got '%s', want '%s'", got, want);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	unsigned long n, k;
	pthread_t th;

	if (argc < 3)
		die(PROG, "usage: cmdline_check N PAUSE_MS TOKEN...");
	n = parse_ulong(PROG, "N", argv[1], 1, 1UL << 30);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[2], 0, 10000);
	prctl(PR_SET_NAME, "cmdline-main", 0, 0, 0);
	if (pthread_create(&th, NULL, worker, NULL))
		die(PROG, "pthread_create failed");
	while (!__atomic_load_n(&worker_named, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	for (k = 1; k <= n; k++) {
		check_cmdline(argc, argv);
		check_environ();
		check_comm("cmdline-main");
		say("step %lu", k);
		sleep_ms(pause_ms);
	}
	say("done %lu", n);
	return 0;
}
