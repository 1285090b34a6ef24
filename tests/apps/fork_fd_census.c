/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork_fd_census N MIB DIR: hold MIB MiB of memory (so that each image
 * takes a while to be made durable) and fork N children one after the
 * other, as fast as they end. Each child looks at its descriptors and
 * reports every one that names a file under DIR (the checkpoint
 * directory: the program never opens anything there, so such a
 * descriptor was inherited from libckpt; the child's own image, which
 * its own libckpt has open while it is checkpointed, is not counted: its
 * name holds the child's pid), then exits. The parent prints
 * "child I fds K" (K: how many it found), "LEAK child I fd F TARGET" for
 * each, and at the end "done N leaks L". It runs until N children ended.
 */
#include <dirent.h>
#include <sys/wait.h>
#include "app_util.h"

/* "ckpt_<program>_<id>-<pid>-<time>.img" or, being written,
 * ".ckpt_<program>_<id>.img.tmp.<pid>" (docs/image-format.md) */
static int is_own_image(const char *target)
{
	char mine[64];
	const char *tmp = strstr(target, ".img.tmp.");

	if (tmp)
		return atoi(tmp + strlen(".img.tmp.")) == getpid();
	snprintf(mine, sizeof(mine), "-%d-", (int)getpid());
	return strstr(strrchr(target, '/'), mine) != NULL;
}

static int report_inherited(unsigned long i, const char *dir)
{
	char link[300], target[4096];
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	int found = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t n;

		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		if (strncmp(target, dir, strlen(dir)) || is_own_image(target))
			continue;
		say("LEAK child %lu fd %s %s", i, e->d_name, target);
		found++;
	}
	closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	unsigned long n, leaks = 0;
	size_t size;
	char *mem;

	if (argc != 4)
		die(argv[0], "usage: fork_fd_census N MIB DIR");
	n = strtoul(argv[1], NULL, 10);
	size = strtoul(argv[2], NULL, 10) << 20;
	mem = malloc(size);
	if (!mem)
		die(argv[0], "malloc %zu: %s", size, strerror(errno));
	for (size_t k = 0; k < size; k += 4096)
		mem[k] = (char)(k * 2654435761u >> 24);
	for (unsigned long i = 1; i <= n; i++) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			die(argv[0], "fork: %s", strerror(errno));
		if (pid == 0) {
			int found = report_inherited(i, argv[3]);

			_exit(found < 0 ? 100 : found);
		}
		if (waitpid(pid, &status, 0) < 0)
			die(argv[0], "waitpid: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status) == 100)
			die(argv[0], "child %lu failed (status %#x)", i,
			    status);
		leaks += WEXITSTATUS(status);
		say("child %lu fds %d", i, WEXITSTATUS(status));
	}
	say("done %lu leaks %lu", n, leaks);
	return leaks ? 1 : 0;
}
