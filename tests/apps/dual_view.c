/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dual_view memfd|sysv N PAUSE_MS: one shared object seen through two
 * mappings of one process, as the BEAM JIT (Erlang) maps its code: a
 * memfd mapped writable and read-only with the fd closed, or a SysV
 * segment attached twice (removed at once: only the attachments hold
 * it). Count from 1 to N, writing each number through the first view and
 * reading it through the second, printing "count K SUM BAD" (BAD: reads
 * that disagreed) and sleeping PAUSE_MS; then "done N SUM BAD".
 */
#include <sys/mman.h>
#include <sys/shm.h>

#include "app_util.h"

#define PROG "dual_view"
#define SIZE (64 * 1024)

static void memfd_views(volatile uint64_t **rw, volatile uint64_t **ro)
{
	int fd = memfd_create("vmem", 0);

	if (fd < 0 || ftruncate(fd, SIZE) < 0)
		die(PROG, "memfd: %s", strerror(errno));
	*rw = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	*ro = mmap(NULL, SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (*rw == MAP_FAILED || *ro == MAP_FAILED)
		die(PROG, "mmap: %s", strerror(errno));
	close(fd);
}

static void sysv_views(volatile uint64_t **rw, volatile uint64_t **ro)
{
	int id = shmget(IPC_PRIVATE, SIZE, IPC_CREAT | 0600);

	if (id < 0)
		die(PROG, "shmget: %s", strerror(errno));
	*rw = shmat(id, NULL, 0);
	*ro = shmat(id, NULL, SHM_RDONLY);
	if (*rw == (void *)-1 || *ro == (void *)-1)
		die(PROG, "shmat: %s", strerror(errno));
	shmctl(id, IPC_RMID, NULL);
}

int main(int argc, char **argv)
{
	volatile uint64_t *rw, *ro;
	unsigned long n, pause_ms, bad = 0;
	uint64_t sum = 0;

	if (argc != 4)
		die(PROG, "usage: %s memfd|sysv N PAUSE_MS", PROG);
	n = strtoul(argv[2], NULL, 10);
	pause_ms = strtoul(argv[3], NULL, 10);
	if (!strcmp(argv[1], "memfd"))
		memfd_views(&rw, &ro);
	else if (!strcmp(argv[1], "sysv"))
		sysv_views(&rw, &ro);
	else
		die(PROG, "unknown kind: %s", argv[1]);
	for (unsigned long k = 1; k <= n; k++) {
		size_t slot = k % (SIZE / sizeof(uint64_t));

		rw[slot] = k * 7;
		if (ro[slot] != k * 7)
			bad++;
		/* what an earlier round wrote is still seen the same way */
		if (k > 1 && ro[(k - 1) % (SIZE / sizeof(uint64_t))] !=
			     (k - 1) * 7)
			bad++;
		sum += ro[slot];
		say("count %lu %" PRIu64 " %lu", k, sum, bad);
		sleep_ms(pause_ms);
	}
	say("done %lu %" PRIu64 " %lu", n, sum, bad);
	return 0;
}
