// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A restart under a user-mode emulator. qemu-user cannot exec a program of
 * its guest architecture (the host kernel does not know the format and
 * no binfmt_misc handler is registered), so ckpt_restart, itself running
 * under qemu, execs the emulator instead:
 *
 *   $CKPT_RESTART_EMULATOR -0 ARGV0 [-E LD_PRELOAD=...] /proc/self/fd/N ARGV1...
 *
 * CKPT_RESTART_EMULATOR is the host command line of the emulator, words
 * separated by spaces (tests/cross/ckpt-aarch64 sets it, with -R so the
 * guest's MAP_FIXED mappings cannot land on qemu itself). The guest's
 * LD_PRELOAD goes through -E, never to the host emulator.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "emulator_exec.h"

#define EMULATOR_WORDS_MAX 32

static int split_words(char *line, char **words, int max)
{
	int n = 0;

	for (char *w = strtok(line, " "); w && n < max; w = strtok(NULL, " "))
		words[n++] = w;
	return n;
}

static size_t count(char **v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

int emulator_exec(int fd, char **argv, char **envp)
{
	const char *emulator = getenv("CKPT_RESTART_EMULATOR");
	size_t nargs = count(argv), nenv = count(envp), a = 0, e = 0;
	char *line, **args, **env, path[32];
	int nwords;

	if (!emulator || !*emulator)
		return 0;
	line = strdup(emulator);
	args = calloc(EMULATOR_WORDS_MAX + nargs + 6, sizeof(*args));
	env = calloc(nenv + 1, sizeof(*env));
	if (!line || !args || !env)
		return -ENOMEM;
	nwords = split_words(line, args, EMULATOR_WORDS_MAX);
	if (nwords == 0)
		return -EINVAL;
	a = nwords;
	args[a++] = "-0";
	args[a++] = nargs ? argv[0] : "ckpt_restart_loader";
	for (size_t i = 0; i < nenv; i++) {
		if (strncmp(envp[i], "LD_PRELOAD=", 11) == 0) {
			args[a++] = "-E";
			args[a++] = envp[i];
		} else {
			env[e++] = envp[i];
		}
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	args[a++] = path;
	for (size_t i = 1; i < nargs; i++)
		args[a++] = argv[i];
	if (fcntl(fd, F_SETFD, 0) < 0)
		return -errno;
	execvpe(args[0], args, env);
	return -errno;
}
