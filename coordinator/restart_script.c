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
#include "ckpt/safe_file.h"
#include "coordinator.h"

#define SCRIPT_NAME "ckpt_restart_script.sh"
#define TMP_NAME "." SCRIPT_NAME ".tmp"

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

/* The script refuses to run when someone else could have edited it:
 * not owned by whoever runs it, or writable by group or others. */
static const char self_check[] =
	"if [ ! -O \"$0\" ] || [ -n \"$(find \"$0\" -prune -perm /022 "
	"2>/dev/null)\" ]; then\n"
	"\techo \"$0: refusing to run: not owned by $(id -un), or "
	"writable by others\" >&2\n\texit 1\nfi\n";

static void put_script(FILE *f, const char *restart_bin, const char *coord,
		       const char *paths, uint64_t generation)
{
	char when[64];
	const char *p, *nl;
	time_t now = time(NULL);

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&now));
	fprintf(f, "#!/bin/sh\n# Restarts the computation from checkpoint %llu"
		" (%s), written by ckpt_coordinator.\n# Extra arguments go to "
		"ckpt_restart. CKPT_COORD, when set, names the coordinator\n"
		"# to join instead of the one the computation used.\n",
		(unsigned long long)generation, when);
	fputs(self_check, f);
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
}

/* Say so when the script replaces a file ckpt did not write there (an
 * earlier script is a regular file of ours). */
static void note_replaced(int dirfd, const char *dir)
{
	struct ckpt_refusal ref = { NULL, 0 };

	if (ckpt_own_leftover(dirfd, SCRIPT_NAME, &ref) < 0 && ref.why)
		coord_log("replacing %s/%s: %s (owner uid %u)", dir,
			  SCRIPT_NAME, ref.why, ref.uid);
}

/* The temporary script, made exclusively in dir, which is opened once
 * (*dirfd; docs/security.md, "Files in the checkpoint directory"). */
static int create_tmp(const char *dir, int *dirfd)
{
	struct ckpt_refusal ref;
	int fd;

	*dirfd = ckpt_safe_dir_open(dir, &ref);
	fd = *dirfd < 0 ? *dirfd :
	     ckpt_create_at(*dirfd, TMP_NAME, O_WRONLY, 0700, &ref);
	if (fd < 0 && ref.why)
		coord_log("not writing %s/%s: %s: %s (owner uid %u)", dir,
			  SCRIPT_NAME, *dirfd < 0 ? "its directory" : TMP_NAME,
			  ref.why, ref.uid);
	return fd;
}

/* Written to the temporary file, then renamed over the script with the
 * same directory descriptor. */
static int write_script(const char *dir, const char *restart_bin,
			const char *coord, const char *paths,
			uint64_t generation)
{
	int dirfd, fd = create_tmp(dir, &dirfd), r = 0;
	FILE *f;

	if (fd < 0) {
		r = fd;
		goto out;
	}
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
	} else {
		put_script(f, restart_bin, coord, paths, generation);
		if (fflush(f) != 0 || fsync(fileno(f)) != 0)
			r = -errno;
		fclose(f);
	}
	if (r == 0) {
		note_replaced(dirfd, dir);
		if (renameat(dirfd, TMP_NAME, dirfd, SCRIPT_NAME) < 0)
			r = -errno;
	}
	if (r < 0)
		unlinkat(dirfd, TMP_NAME, 0);
out:
	if (dirfd >= 0)
		close(dirfd);
	return r;
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
