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
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/utsname.h>
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

#define MAX_HOSTS 64

/* The hosts the images of one checkpoint were written on. */
struct script_hosts {
	const char *lines;		/* the host of each path, per line */
	char self[65];			/* ours, for "" lines */
	char name[MAX_HOSTS][65];	/* the distinct hosts */
	char ip[MAX_HOSTS][64];		/* the address each came from */
	int n;
};

/* The next line of *p (without its newline) into out; false at the end. */
static bool next_line(const char **p, char *out, size_t len)
{
	const char *nl;

	if (!**p)
		return false;
	nl = strchrnul(*p, '\n');
	snprintf(out, len, "%.*s", (int)(nl - *p), *p);
	*p = *nl ? nl + 1 : nl;
	return true;
}

/* A line of sh->lines, "HOST IP", cut in two: the host (ours for "")
 * and *ip (may be ""). */
static const char *split_host(const struct script_hosts *sh, char *line,
			      const char **ip)
{
	char *space = strchr(line, ' ');

	*ip = "";
	if (space) {
		*space = '\0';
		*ip = space + 1;
	}
	return line[0] ? line : sh->self;
}

/* The image arguments of the processes of host (all of them when host is
 * NULL), one per line. */
static void put_images(FILE *f, const struct script_hosts *sh,
		       const char *paths, const char *host)
{
	const char *p = paths, *h = sh->lines;
	char one[4200], its[160];
	const char *ip;

	while (next_line(&p, one, sizeof(one))) {
		if (!next_line(&h, its, sizeof(its)))
			its[0] = '\0';
		if (!one[0] || (host && strcmp(split_host(sh, its, &ip), host)))
			continue;
		fputs(" \\\n\t", f);
		put_quoted(f, one);
	}
}

/* One ckpt_restart per host, each started on its host by the command
 * template $CKPT_HOST_CMD ({host} replaced by the host's name; default
 * "ssh {host}"); the script waits for all of them (docs/multi-host.md). */
static const char on_host[] =
	"on_host() {\n"
	"\tt=${CKPT_HOST_CMD-}\n"
	"\t[ -n \"$t\" ] || t='ssh {host}'\n"
	"\tc=\n"
	"\twhile :; do\n"
	"\t\tcase $t in\n"
	"\t\t*'{host}'*) c=\"$c${t%%\"{host}\"*}$1\"; "
	"t=${t#*\"{host}\"} ;;\n"
	"\t\t*) break ;;\n"
	"\t\tesac\n"
	"\tdone\n"
	"\tshift\n"
	"\teval \"exec $c$t \\\"\\$@\\\"\"\n"
	"}\n"
	"pids=\n"
	"trap 'kill $pids 2>/dev/null; exit 143' HUP INT TERM\n";

/* ckpt_restart_script.sh --host OLD=NEW[@ADDR]: host OLD's images restart
 * on NEW, and the address OLD's processes had becomes ADDR (default: the
 * address NEW's own processes had). hI and aI hold where host I's images
 * go and their new address; a bad --host stops the script before anything
 * starts (docs/multi-host.md, "Restarting on other hosts"). */
static const char parse_moves[] =
	"bad() { echo \"$0: --host $1: $2\" >&2; exit 2; }\n"
	"move() {\n"
	"\tcase $1 in *=?*) ;; *) bad \"$1\" 'expected OLD=NEW or "
	"OLD=NEW@ADDR' ;; esac\n"
	"\told=${1%%=*} new=${1#*=} addr=\n"
	"\tcase $new in *@*) addr=${new#*@} new=${new%%@*} ;; esac\n"
	"\tcase $new in ''|-*|*[!A-Za-z0-9._-]*) bad \"$1\" \"'$new' is not "
	"a host name (letters, digits, '.', '-', '_')\" ;; esac\n"
	"\tcase $addr in *[!0-9A-Fa-f.:]*) bad \"$1\" \"'$addr' is not a "
	"numeric IP address\" ;; esac\n"
	"\t[ -n \"$addr\" ] || addr=$(address_of \"$new\") || bad \"$1\" "
	"\"$new is not a host of the computation: give its address "
	"($new@ADDR)\"\n"
	"\tset_host \"$old\" \"$new\" \"$addr\" || bad \"$1\" \"$old is not a "
	"host of the computation (its hosts:$hosts)\"\n"
	"\tmoved=1\n"
	"}\n"
	"moved=\n"
	"n=$#\n"
	"while [ \"$n\" -gt 0 ]; do\n"
	"\ta=$1\n"
	"\tshift\n"
	"\tn=$((n - 1))\n"
	"\tcase $a in\n"
	"\t--host)\n"
	"\t\t[ \"$n\" -gt 0 ] || bad '' 'expected OLD=NEW or OLD=NEW@ADDR'\n"
	"\t\tmove \"$1\"\n"
	"\t\tshift\n"
	"\t\tn=$((n - 1)) ;;\n"
	"\t--host=*) move \"${a#--host=}\" ;;\n"
	"\t*) set -- \"$@\" \"$a\" ;;\n"
	"\tesac\n"
	"done\n";

/* The hosts' table: hI/aI, address_of NAME (the address a host's own
 * processes had) and set_host OLD NEW ADDR. */
static void put_host_table(FILE *f, const struct script_hosts *sh)
{
	fputs("# Where each host's images restart (hI) and the address that "
	      "replaces the one\n# its processes had (aI); --host OLD=NEW"
	      "[@ADDR] changes them.\nhosts=\n", f);
	for (int i = 0; i < sh->n; i++)
		fprintf(f, "h%d='%s' a%d='%s' hosts=\"$hosts %s\"\n", i,
			sh->name[i], i, sh->ip[i], sh->name[i]);
	fputs("address_of() {\n\tcase $1 in\n", f);
	for (int i = 0; i < sh->n; i++)
		if (sh->ip[i][0])
			fprintf(f, "\t'%s') echo '%s' ;;\n", sh->name[i],
				sh->ip[i]);
	fputs("\t*) return 1 ;;\n\tesac\n}\nset_host() {\n\tcase $1 in\n", f);
	for (int i = 0; i < sh->n; i++)
		fprintf(f, "\t'%s') h%d=$2 a%d=$3 ;;\n", sh->name[i], i, i);
	fputs("\t*) return 1 ;;\n\tesac\n}\n", f);
	fputs(parse_moves, f);
}

/* --host-map: each host's old address to its new one (host_map.c). */
static void put_host_map(FILE *f, const struct script_hosts *sh)
{
	const char *sep = "map=";

	for (int i = 0; i < sh->n; i++) {
		if (!sh->ip[i][0])
			continue;
		fprintf(f, "%s%s=$a%d", sep, sh->ip[i], i);
		sep = ",";
	}
	fputs(*sep == ',' ? "\n" : "map=\n", f);
}

/* --peer-hosts: the new addresses of the hosts other than host i, so
 * that the TCP connections between hosts meet
 * (restart/restart_tcp_hosts.c). */
static void put_peer_hosts(FILE *f, const struct script_hosts *sh, int i)
{
	const char *sep = " --peer-hosts \"";

	for (int j = 0; j < sh->n; j++) {
		if (j == i || !sh->ip[j][0])
			continue;
		fprintf(f, "%s$a%d", sep, j);
		sep = ",";
	}
	if (*sep == ',')
		fputc('"', f);
}

/* imagesI CMD...: CMD... with host I's images appended. */
static void put_image_lists(FILE *f, const struct script_hosts *sh,
			    const char *paths)
{
	for (int i = 0; i < sh->n; i++) {
		fprintf(f, "images%d() { \"$@\"", i);
		put_images(f, sh, paths, sh->name[i]);
		fputs("\n}\n", f);
	}
}

/* Moved hosts are checked first, every host by its ckpt_restart --check:
 * one that cannot take its images stops the script, nothing started. */
static void put_checks(FILE *f, const char *restart_bin,
		       const struct script_hosts *sh)
{
	fputs("if [ -n \"$moved\" ]; then\n", f);
	for (int i = 0; i < sh->n; i++) {
		fprintf(f, "\t(images%d on_host \"$h%d\" ", i, i);
		put_quoted(f, restart_bin);
		fprintf(f, " --check ${map:+--host-map \"$map\"} \"$@\") || {\n"
			"\t\techo \"$0: the images of %s cannot restart on "
			"$h%d (above); nothing was restarted\" >&2\n"
			"\t\texit 1\n\t}\n", sh->name[i], i);
	}
	fputs("fi\n", f);
}

static void put_per_host(FILE *f, const char *restart_bin,
			 const struct script_hosts *sh, const char *paths)
{
	put_host_table(f, sh);
	put_host_map(f, sh);
	fputs(on_host, f);
	put_image_lists(f, sh, paths);
	put_checks(f, restart_bin, sh);
	for (int i = 0; i < sh->n; i++) {
		fprintf(f, "images%d on_host \"$h%d\" ", i, i);
		put_quoted(f, restart_bin);
		fputs(" --coord \"$coord\"", f);
		put_peer_hosts(f, sh, i);
		fputs(" ${map:+--host-map \"$map\"} \"$@\" &\n"
		      "pids=\"$pids $!\"\n", f);
	}
	fputs("st=0\nfor p in $pids; do wait \"$p\" || st=$?; done\n"
	      "exit $st\n", f);
}

/* --host needs a script of several hosts: one host's images restart
 * where the script runs. */
static const char one_host_moves[] =
	"for a; do\n"
	"\tcase $a in --host|--host=*)\n"
	"\t\techo \"$0: --host: the images of this checkpoint all come from "
	"one host: run this script on the host that is to restart them, "
	"and give ckpt_restart --host-map OLD=NEW if its address changed "
	"(docs/multi-host.md)\" >&2\n"
	"\t\texit 2 ;;\n"
	"\tesac\n"
	"done\n";

static void put_script(FILE *f, const char *restart_bin, const char *coord,
		       const struct script_hosts *sh, const char *paths,
		       uint64_t generation)
{
	char when[64];
	time_t now = time(NULL);

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&now));
	fprintf(f, "#!/bin/sh\n# Restarts the computation from checkpoint %llu"
		" (%s), written by ckpt_coordinator.\n# Extra arguments go to "
		"ckpt_restart. CKPT_COORD, when set, names the coordinator\n"
		"# to join instead of the one the computation used.\n",
		(unsigned long long)generation, when);
	if (sh->n > 1)
		fprintf(f, "# Its processes ran on %d hosts: each host's images "
			"are restarted on that host\n# by one ckpt_restart, "
			"started with the command template CKPT_HOST_CMD\n"
			"# (default 'ssh {host}'; {host} is replaced by the "
			"host name), e.g.\n#   CKPT_HOST_CMD='ip netns exec "
			"{host}' %s\n# --host OLD=NEW[@ADDR] restarts host "
			"OLD's images on host NEW, whose address\n# takes the "
			"place of OLD's (docs/multi-host.md).\n", sh->n,
			SCRIPT_NAME);
	fputs(self_check, f);
	fprintf(f, "coord=\"${CKPT_COORD:-%s}\"\n", coord);
	if (sh->n > 1) {
		put_per_host(f, restart_bin, sh, paths);
		return;
	}
	fputs(one_host_moves, f);
	fputs("exec ", f);
	put_quoted(f, restart_bin);
	fputs(" --coord \"$coord\" \"$@\"", f);
	put_images(f, sh, paths, NULL);
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
			const char *coord, const struct script_hosts *sh,
			const char *paths, uint64_t generation)
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
		put_script(f, restart_bin, coord, sh, paths, generation);
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

/* A host name goes into the script and into the user's command template:
 * letters, digits, '.', '-' and '_' only. */
static bool host_name_ok(const char *h)
{
	return h[0] && h[0] != '-' &&
	       strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789.-_") == strlen(h);
}

/* The distinct hosts of the images; -EINVAL (logged) for a host name the
 * script cannot carry. */
static int collect_hosts(struct script_hosts *sh, const char *hosts)
{
	struct utsname u;
	char its[160];
	const char *h = hosts, *ip;

	sh->lines = hosts;
	sh->n = 0;
	snprintf(sh->self, sizeof(sh->self), "%s",
		 uname(&u) == 0 ? u.nodename : "localhost");
	while (next_line(&h, its, sizeof(its))) {
		const char *name = split_host(sh, its, &ip);
		int seen = 0;

		for (int i = 0; i < sh->n; i++)
			seen |= !strcmp(sh->name[i], name);
		if (seen)
			continue;
		if (!host_name_ok(name) || sh->n == MAX_HOSTS ||
		    strspn(ip, "0123456789abcdefABCDEF.:") != strlen(ip)) {
			coord_log("not writing %s: %s", SCRIPT_NAME,
				  sh->n == MAX_HOSTS ?
				  "the images are on more than 64 hosts" :
				  "a process reported a host name other than "
				  "letters, digits, '.', '-' and '_'");
			return -EINVAL;
		}
		snprintf(sh->ip[sh->n], sizeof(sh->ip[0]), "%.63s", ip);
		snprintf(sh->name[sh->n++], sizeof(sh->name[0]), "%s", name);
	}
	return 0;
}

/* A script that could not be written leaves the one of an earlier
 * checkpoint, which may name other images: the requester is told (not
 * when the directory itself is gone: no script is left there). */
static void warn_not_written(struct buf *warnings, const char *dir, int r,
			     uint64_t generation)
{
	coord_log("cannot write %s/%s: %s", dir, SCRIPT_NAME, strerror(-r));
	if (r == -ENOENT)
		return;
	buf_printf(warnings, "%s/%s was not written (%s): a script there is "
		   "from a checkpoint before %llu and may name other images; "
		   "restart checkpoint %llu with ckpt_restart and the image "
		   "paths printed\n", dir, SCRIPT_NAME, strerror(-r),
		   (unsigned long long)generation,
		   (unsigned long long)generation);
}

void write_restart_scripts(struct coordinator *co, const char *paths,
			   const char *hosts, uint64_t generation,
			   struct buf *warnings)
{
	char restart_bin[4096], dir[4096], done[8][4096];
	static struct script_hosts sh;
	int ndone = 0;
	const char *p = paths;

	if (ckpt_install_path("ckpt_restart", restart_bin,
			      sizeof(restart_bin)) < 0)
		snprintf(restart_bin, sizeof(restart_bin), "ckpt_restart");
	if (!shell_safe(co->addr) || collect_hosts(&sh, hosts) < 0)
		return;
	/* One script per directory that holds images of this checkpoint. */
	while (next_line(&p, dir, sizeof(dir))) {
		char *slash = strrchr(dir, '/');
		int seen = 0, r;

		if (!slash || slash == dir)
			continue;
		*slash = 0;
		for (int i = 0; i < ndone; i++)
			seen |= !strcmp(done[i], dir);
		if (seen || ndone == 8)
			continue;
		snprintf(done[ndone++], sizeof(done[0]), "%s", dir);
		r = write_script(dir, restart_bin, co->addr, &sh, paths,
				 generation);
		if (r < 0)
			warn_not_written(warnings, dir, r, generation);
	}
}
