// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * After every successful checkpoint the coordinator writes
 * ckpt_restart_script.sh beside the images: one command that restarts the
 * whole computation from exactly the images of that checkpoint. Written
 * to a temporary file and renamed, so a crash never leaves half a script.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/coord_client.h"
#include "coordinator.h"

#define SCRIPT_NAME "ckpt_restart_script.sh"

/* Single-quote s for the shell. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

static int write_script(const char *dir, const char *restart_bin,
			const char *coord, const char *paths,
			uint64_t generation)
{
	char tmp[4200], final[4200], when[64];
	const char *p, *nl;
	time_t now = time(NULL);
	FILE *f;
	int fd;

	snprintf(final, sizeof(final), "%s/%s", dir, SCRIPT_NAME);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, SCRIPT_NAME);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&now));
	fprintf(f, "#!/bin/sh\n# Restarts the computation from checkpoint %llu"
		" (%s), written by ckpt_coordinator.\n# Extra arguments go to "
		"ckpt_restart. CKPT_COORD, when set, names the coordinator\n"
		"# to join instead of the one the computation used.\n",
		(unsigned long long)generation, when);
	fputs("exec ", f);
	put_quoted(f, restart_bin);
	fprintf(f, " --coord \"${CKPT_COORD:-%s}\" \"$@\"", coord);
	for (p = paths; *p; p = *nl ? nl + 1 : nl) {
		char one[4200];

		nl = strchrnul(p, '\n');
		snprintf(one, sizeof(one), "%.*s", (int)(nl - p), p);
		if (!one[0])
			continue;
		fputs(" \\\n\t", f);
		put_quoted(f, one);
	}
	fputc('\n', f);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		int e = errno;

		fclose(f);
		unlink(tmp);
		return -e;
	}
	fclose(f);
	if (rename(tmp, final) < 0) {
		int e = errno;

		unlink(tmp);
		return -e;
	}
	return 0;
}

/* The shell would take the coordinator address literally inside "${...}":
 * only addresses without shell metacharacters are written as the default. */
static int shell_safe(const char *s)
{
	return strpbrk(s, "\"'`$\\}\n") == NULL;
}

void write_restart_scripts(struct coordinator *co, const char *paths,
			   uint64_t generation)
{
	char restart_bin[4096], dir[4096], done[8][4096];
	int ndone = 0;
	const char *p, *nl;

	if (ckpt_install_path("ckpt_restart", restart_bin,
			      sizeof(restart_bin)) < 0)
		snprintf(restart_bin, sizeof(restart_bin), "ckpt_restart");
	if (!shell_safe(co->addr))
		return;
	/* One script per directory that holds images of this checkpoint. */
	for (p = paths; *p; p = *nl ? nl + 1 : nl) {
		char *slash;
		int seen = 0, r;

		nl = strchrnul(p, '\n');
		snprintf(dir, sizeof(dir), "%.*s", (int)(nl - p), p);
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			continue;
		*slash = 0;
		for (int i = 0; i < ndone; i++)
			seen |= !strcmp(done[i], dir);
		if (seen || ndone == 8)
			continue;
		snprintf(done[ndone++], sizeof(done[0]), "%s", dir);
		r = write_script(dir, restart_bin, co->addr, paths, generation);
		if (r < 0)
			coord_log("cannot write %s/%s: %s", dir, SCRIPT_NAME,
				  strerror(-r));
	}
}
