/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Records of 64 bytes through a named pipe (FIFO), with the FIFO always
 * full: the writer writes as fast as it can, the reader takes one record
 * every DELAY_MS. Each record carries its sequence number and a hash of
 * it; the reader fails on a lost, doubled or corrupted record.
 *
 *   fifo_relay tree FIFO N DELAY_MS: make the FIFO, fork a writer and a
 *     reader that open it by path; the parent also holds it O_RDWR (never
 *     used until the end: then no byte may be left in it)
 *   fifo_relay write N: write N records to stdout (`producer > fifo`)
 *   fifo_relay read N DELAY_MS: read N records from stdin
 *
 * The reader prints "got I" every 50 records, then "OK fifo N <hash>".
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "app_util.h"

#define MAGIC 0x4f464946u	/* "FIFO" */

struct record {
	uint32_t seq, magic;
	uint64_t hash;
	char pad[48];
};

static void fail(const char *what, unsigned long a, unsigned long b)
{
	printf("FAIL %s %lu %lu\n", what, a, b);
	fflush(stdout);
	exit(1);
}

static void write_records(int fd, unsigned long n)
{
	struct record r;

	memset(&r, 0, sizeof(r));
	r.magic = MAGIC;
	for (unsigned long i = 0; i < n; i++) {
		size_t done = 0;

		r.seq = i;
		r.hash = mix64(i + 1);
		while (done < sizeof(r)) {
			ssize_t k = write(fd, (char *)&r + done,
					  sizeof(r) - done);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				fail("write errno", errno, i);
			done += k;
		}
	}
}

static void read_records(int fd, unsigned long n, unsigned long delay_ms)
{
	uint64_t seen = FNV1A_INIT;
	struct record r;

	for (unsigned long i = 0; i < n; i++) {
		size_t done = 0;

		while (done < sizeof(r)) {
			ssize_t k = read(fd, (char *)&r + done,
					 sizeof(r) - done);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				fail(k ? "read errno" : "early EOF at",
				     k ? (unsigned long)errno : i, done);
			done += k;
		}
		if (r.seq != i || r.magic != MAGIC || r.hash != mix64(i + 1))
			fail("record out of sequence: got, want", r.seq, i);
		seen = fnv1a(seen, &r, sizeof(r));
		if ((i + 1) % 50 == 0)
			say("got %lu", i + 1);
		sleep_ms(delay_ms);
	}
	say("OK fifo %lu %016llx", n, (unsigned long long)seen);
}

/* wait(), not waitpid(pid): a wait for one pid that a checkpoint
 * interrupts is restarted by the kernel with the pid from before the
 * restart (see docs/resources.md, Limits of Virtual ids). */
static void wait_children(int n)
{
	int status;

	for (int i = 0; i < n; i++) {
		while (wait(&status) < 0)
			if (errno != EINTR)
				die("fifo_relay", "wait: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			die("fifo_relay", "a child failed (status %#x)",
			    status);
	}
}

static void spawn(const char *fifo, int mode, unsigned long n,
		   unsigned long delay_ms)
{
	pid_t pid;
	int fd;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fifo_relay", "fork: %s", strerror(errno));
	if (pid)
		return;
	fd = open(fifo, mode);
	if (fd < 0)
		die("fifo_relay", "open %s: %s", fifo, strerror(errno));
	if (mode == O_WRONLY)
		write_records(fd, n);
	else
		read_records(fd, n, delay_ms);
	exit(0);
}

static void tree(const char *fifo, unsigned long n, unsigned long delay_ms)
{
	char byte;
	int rw;

	unlink(fifo);
	if (mkfifo(fifo, 0640) < 0)
		die("fifo_relay", "mkfifo %s: %s", fifo, strerror(errno));
	spawn(fifo, O_WRONLY, n, 0);
	spawn(fifo, O_RDONLY, n, delay_ms);
	rw = open(fifo, O_RDWR);
	if (rw < 0)
		die("fifo_relay", "open %s O_RDWR: %s", fifo, strerror(errno));
	wait_children(2);
	if (fcntl(rw, F_SETFL, O_NONBLOCK) < 0)
		die("fifo_relay", "fcntl: %s", strerror(errno));
	if (read(rw, &byte, 1) != -1 || errno != EAGAIN)
		fail("bytes left in the FIFO after the last record", 0, 0);
	say("OK tree");
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "tree"))
		tree(argv[2], parse_ulong("fifo_relay", "N", argv[3], 1,
					  10000000),
		     parse_ulong("fifo_relay", "DELAY_MS", argv[4], 0, 1000));
	else if (argc == 3 && !strcmp(argv[1], "write"))
		write_records(1, parse_ulong("fifo_relay", "N", argv[2], 1,
					     10000000));
	else if (argc == 4 && !strcmp(argv[1], "read"))
		read_records(0, parse_ulong("fifo_relay", "N", argv[2], 1,
					    10000000),
			     parse_ulong("fifo_relay", "DELAY_MS", argv[3], 0,
					 1000));
	else
		die("fifo_relay", "usage: fifo_relay tree FIFO N DELAY_MS | "
		    "write N | read N DELAY_MS");
	return 0;
}
