// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The guest's checkpoint/restart test program: counts to N, one step
 * every 10 ms, appending each value to LOG. Checkpointed and restarted,
 * the log must still end with "done N".
 * Usage: ckpt_counter LOG N
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec step = { 0, 10 * 1000 * 1000 };
	char line[64];
	long i, n;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: ckpt_counter LOG N\n");
		return 2;
	}
	n = atol(argv[2]);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	for (i = 0; i < n; i++) {
		int len = snprintf(line, sizeof(line), "%ld\n", i);

		if (write(fd, line, len) != len)
			return 1;
		nanosleep(&step, NULL);
	}
	snprintf(line, sizeof(line), "done %ld\n", n);
	return write(fd, line, strlen(line)) < 0;
}
