/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * popen_system N TICKS: system("exit 3"); then reads N numbers from a
 * shell started by popen() ("got K sum S" for each; the shell sleeps
 * 10 ms between them and exits 5); pclose(); then system() of a shell
 * that prints "tick K" every 50 ms up to TICKS and exits 9. At the end:
 * "done count N sum S system0 3 pclose 5 system 9". The shells must be
 * in the computation and their exit statuses must reach the program
 * across a restart.
 */
#include <sys/wait.h>
#include "app_util.h"

#define PROG "popen_system"

static int exit_code(int status)
{
	return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv)
{
	unsigned long n, ticks;
	long count = 0, sum = 0;
	char cmd[256], line[64];
	int st0, pc, st;
	FILE *fp;

	if (argc != 3)
		die(PROG, "usage: popen_system N TICKS");
	n = parse_ulong(PROG, "N", argv[1], 1, 1000000);
	ticks = parse_ulong(PROG, "TICKS", argv[2], 1, 1000000);
	st0 = system("exit 3");
	snprintf(cmd, sizeof(cmd), "i=1; while [ $i -le %lu ]; do echo $i; "
		 "i=$((i+1)); sleep 0.01; done; exit 5", n);
	fp = popen(cmd, "r");
	if (!fp)
		die(PROG, "popen: %s", strerror(errno));
	while (fgets(line, sizeof(line), fp)) {
		sum += atol(line);
		say("got %ld sum %ld", ++count, sum);
	}
	pc = pclose(fp);
	snprintf(cmd, sizeof(cmd), "i=0; while [ $i -lt %lu ]; do sleep 0.05; "
		 "i=$((i+1)); echo tick $i; done; exit 9", ticks);
	fflush(stdout);
	st = system(cmd);
	say("done count %ld sum %ld system0 %d pclose %d system %d", count,
	    sum, exit_code(st0), exit_code(pc), exit_code(st));
	return 0;
}
