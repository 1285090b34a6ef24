/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * daemonize FILE TICKS: the classic double fork: the process forks, the
 * child calls setsid() and forks again, both parents exit; the daemon
 * (stdio on /dev/null) appends "tick N pid P sid S" to FILE every 50 ms
 * up to TICKS, then "done". The daemon must stay in the computation.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include "app_util.h"

#define PROG "daemonize"

int main(int argc, char **argv)
{
	unsigned long ticks;
	FILE *out;
	int null_fd;
	pid_t pid;

	if (argc != 3)
		die(PROG, "usage: daemonize FILE TICKS");
	ticks = parse_ulong(PROG, "TICKS", argv[2], 1, 1000000);
	pid = fork();
	if (pid < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (pid > 0)
		return 0;
	if (setsid() < 0)
		die(PROG, "setsid: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (pid > 0)
		return 0;
	null_fd = open("/dev/null", O_RDWR);
	if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 ||
	    dup2(null_fd, 2) < 0)
		return 1;
	out = fopen(argv[1], "a");
	if (!out)
		return 1;
	setvbuf(out, NULL, _IOLBF, 0);
	for (unsigned long k = 1; k <= ticks; k++) {
		fprintf(out, "tick %lu pid %d sid %d\n", k, (int)getpid(),
			(int)getsid(0));
		sleep_ms(50);
	}
	fprintf(out, "done\n");
	return 0;
}
