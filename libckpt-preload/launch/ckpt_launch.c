// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_launch: run PROGRAM under checkpoint control. Makes sure a
 * coordinator answers (starting one if needed), then execs PROGRAM with
 * libckpt.so preloaded and CKPT_COORD / CKPT_DIR set for it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/coord_client.h"
#include "../../protocol/client_internal.h"
#include "../../control/tool_common.h"
#include "setid_exec.h"

#define COORD_TIMEOUT_MS	10000

struct launch {
	const char *coord;
	const char *ckptdir;
	const char *interval;		/* as given, passed on to a coordinator */
	uint32_t interval_s;
	char **argv;			/* PROGRAM ARGS... */
	char addr[512];
	char dir[PATH_MAX];
	char lib[PATH_MAX];
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: ckpt_launch [OPTIONS] [--] PROGRAM [ARGS...]\n"
"Run PROGRAM so that it can be checkpointed (ckpt_command --checkpoint)\n"
"and restarted (ckpt_restart).\n"
"\n"
"  --coord ADDR        coordinator: Unix socket path or HOST:PORT (default:\n"
"                      $CKPT_COORD, else the per-user socket); started if\n"
"                      none answers there\n"
"  --ckptdir DIR       where images go (default: $CKPT_DIR, else the\n"
"                      current directory); made (0700) when missing\n"
"  -i, --interval SECONDS  checkpoint every SECONDS (0: off)\n"
"  --save-files GLOB   save the content of every file matching GLOB (a\n"
"                      shell pattern on the absolute path; '*' also\n"
"                      matches '/') that the program has open or mapped, in\n"
"                      each checkpoint, and put it back at restart: the\n"
"                      file (a database, a log) is rolled back to the\n"
"                      checkpoint's state. Repeatable; kept in\n"
"                      $CKPT_SAVE_FILES (GLOB:GLOB...) for child processes.\n"
"                      A matching file that cannot be read fails the\n"
"                      checkpoint (the previous image stays)\n"
"  --compress          compress every image (zstd, extent by extent, on\n"
"                      all cores; incompressible memory is stored as\n"
"                      it is); kept in $CKPT_COMPRESS=1 for child\n"
"                      processes. ckpt_command --checkpoint --compress\n"
"                      compresses one checkpoint\n"
"  --incremental       after a first full image, each checkpoint writes\n"
"                      only the pages changed since the previous one: a\n"
"                      chain of images ckpt_<prog>_<id>.g<N>.img that\n"
"                      ckpt_restart follows; every 16th is full again\n"
"                      (older images are then removed); kept in\n"
"                      $CKPT_INCREMENTAL=1 for child processes\n"
"  --forked            every checkpoint is a forked one: each process\n"
"                      stops only to fork a frozen copy of itself, which\n"
"                      writes and syncs the image while the program runs\n"
"                      on; kept in $CKPT_FORKED=1 for child processes\n"
"  --tmp-file-max SIZE  save files on temporary storage (tmpfs, /tmp,\n"
"                      /var/tmp) up to SIZE bytes (K, M, G suffixes;\n"
"                      default 64M, also $CKPT_TMP_FILE_MAX); a larger\n"
"                      one is named in a warning at checkpoint time and\n"
"                      must still exist at restart\n"
"  --help, --version\n"
"\n"
"Files other processes change after a checkpoint are not rolled back\n"
"unless saved: a restart warns about each file the program had open for\n"
"writing whose size or modification time changed since.\n"
"\n"
"Exit status: PROGRAM's, or 1 if ckpt_launch fails, 127 if PROGRAM is\n"
"not found, 126 if it cannot be executed.\n");
}

static void setenv_or_die(const char *name, const char *value)
{
	if (setenv(name, value, 1) < 0) {
		fprintf(stderr, "ckpt_launch: cannot set %s: %s\n", name,
			strerror(errno));
		exit(1);
	}
}

/* Appended to $CKPT_SAVE_FILES, made absolute (libckpt matches the
 * absolute paths of the files). */
static void add_save_glob(const char *glob)
{
	const char *old = getenv("CKPT_SAVE_FILES");
	char cwd[PATH_MAX], *value;
	int r;

	if (!glob[0] || strchr(glob, ':')) {
		fprintf(stderr, "ckpt_launch: --save-files '%s': a pattern must "
			"be non-empty and without ':'\n", glob);
		exit(1);
	}
	if (glob[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "ckpt_launch: --save-files %s: cannot make it "
			"absolute: %s\n", glob, strerror(errno));
		exit(1);
	}
	r = asprintf(&value, "%s%s%s%s%s", old && *old ? old : "",
		     old && *old ? ":" : "", glob[0] == '/' ? "" : cwd,
		     glob[0] == '/' ? "" : "/", glob);
	if (r < 0) {
		fprintf(stderr, "ckpt_launch: out of memory\n");
		exit(1);
	}
	setenv_or_die("CKPT_SAVE_FILES", value);
	free(value);
}

static void set_tmp_file_max(const char *size)
{
	uint64_t v;

	if (ckpt_cc_parse_size(size, &v) < 0) {
		fprintf(stderr, "ckpt_launch: bad --tmp-file-max '%s': expected "
			"bytes, or a number with K, M or G\n", size);
		exit(1);
	}
	setenv_or_die("CKPT_TMP_FILE_MAX", size);
}

static void parse_args(int argc, char **argv, struct launch *l)
{
	static const struct option longopts[] = {
		{ "coord", required_argument, NULL, 'C' },
		{ "ckptdir", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "save-files", required_argument, NULL, 'S' },
		{ "tmp-file-max", required_argument, NULL, 'T' },
		{ "compress", no_argument, NULL, 'z' },
		{ "incremental", no_argument, NULL, 'I' },
		{ "forked", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	unsigned long v;
	char *end;
	int opt;

	/* "+": stop at PROGRAM, its options are its own */
	while ((opt = getopt_long(argc, argv, "+i:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'C':
			l->coord = optarg;
			break;
		case 'd':
			l->ckptdir = optarg;
			break;
		case 'i':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' ||
			    v > UINT32_MAX) {
				fprintf(stderr, "ckpt_launch: bad interval '%s': "
					"expected seconds (0 = off)\n", optarg);
				exit(1);
			}
			l->interval = optarg;
			l->interval_s = (uint32_t)v;
			break;
		case 'S':
			add_save_glob(optarg);
			break;
		case 'T':
			set_tmp_file_max(optarg);
			break;
		case 'z':
			setenv_or_die("CKPT_COMPRESS", "1");
			break;
		case 'I':
			setenv_or_die("CKPT_INCREMENTAL", "1");
			break;
		case 'F':
			setenv_or_die("CKPT_FORKED", "1");
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("ckpt_launch (ckpt) %s, protocol %d\n",
			       CKPT_VERSION, CKPT_PROTOCOL_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(1);
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "ckpt_launch: no PROGRAM given (see --help)\n");
		exit(1);
	}
	l->argv = argv + optind;
}

/* Like execvp's search, so a missing program fails before a coordinator
 * is started for it. The path found goes to `found`. */
static int find_program(const char *prog, char *found, size_t len)
{
	const char *path = getenv("PATH");

	if (strchr(prog, '/')) {
		snprintf(found, len, "%s", prog);
		return access(prog, F_OK) == 0 ? 0 : -errno;
	}
	if (!path)
		path = "/bin:/usr/bin";
	while (*path) {
		const char *colon = strchrnul(path, ':');
		int n = (int)(colon - path);

		snprintf(found, len, "%.*s/%s", n ? n : 1, n ? path : ".",
			 prog);
		if (access(found, X_OK) == 0)
			return 0;
		path = *colon ? colon + 1 : colon;
	}
	return -ENOENT;
}

/* Whether an ELF executable names a dynamic loader (PT_INTERP); -1 when
 * the file is not a 64-bit ELF (a script: its interpreter is checked by
 * the kernel, and preloading works through it). */
static int elf_has_interp(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return -1;
	}
	for (int i = 0; i < eh.e_phnum && !found; i++)
		if (pread(fd, &ph, sizeof(ph), eh.e_phoff +
			  (off_t)i * eh.e_phentsize) == sizeof(ph) &&
		    ph.p_type == PT_INTERP)
			found = 1;
	close(fd);
	return found;
}

/* Programs the preload library cannot enter still run, but the user is
 * told that they will not be checkpointed. */
static void warn_if_not_preloadable(const char *path)
{
	if (elf_has_interp(path) == 0)
		fprintf(stderr, "ckpt_launch: warning: %s is statically linked;"
			" libckpt.so cannot be preloaded into it, so it runs "
			"without checkpoints\n", path);
	else
		setid_exec_warn(path);
}

/* A checkpoint directory that does not exist is made, with each missing
 * directory on its path, mode 0700 (images hold the process's memory). */
static int make_ckptdir(const char *dir)
{
	char path[PATH_MAX];
	size_t n = strlen(dir);
	int r;

	if (n >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, n + 1);
	r = ckpt_cc_make_dirs(path);
	if (r < 0)
		return r;
	fprintf(stderr, "ckpt_launch: made the checkpoint directory %s "
		"(mode 0700)\n", dir);
	return 0;
}

static int resolve_ckptdir(struct launch *l)
{
	const char *dir = l->ckptdir;
	struct stat st;
	int r;

	if (!dir || !*dir)
		dir = getenv("CKPT_DIR");
	if (!dir || !*dir)
		dir = ".";
	if (stat(dir, &st) < 0 && errno == ENOENT &&
	    (r = make_ckptdir(dir)) < 0) {
		fprintf(stderr, "ckpt_launch: checkpoint directory %s: cannot "
			"make it: %s\n", dir, strerror(-r));
		return -1;
	}
	if (!realpath(dir, l->dir) || stat(l->dir, &st) < 0) {
		fprintf(stderr, "ckpt_launch: checkpoint directory %s: %s\n",
			dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "ckpt_launch: checkpoint directory %s: not a "
			"directory\n", dir);
		return -1;
	}
	if (access(l->dir, W_OK | X_OK) < 0) {
		fprintf(stderr, "ckpt_launch: checkpoint directory %s: not "
			"writable: %s\n", l->dir, strerror(errno));
		return -1;
	}
	return 0;
}

static int find_libckpt(struct launch *l)
{
	int r = ckpt_install_path("../lib/ckpt/libckpt.so", l->lib,
				  sizeof(l->lib));

	if (r == 0 && access(l->lib, R_OK) < 0)
		r = -errno;
	if (r < 0) {
		fprintf(stderr, "ckpt_launch: cannot find libckpt.so at %s: "
			"%s\n", l->lib[0] ? l->lib : "../lib/ckpt next to "
			"ckpt_launch", strerror(-r));
		return -1;
	}
	return 0;
}

static int spawn_coordinator(struct launch *l)
{
	const char *extra[] = { "-i", l->interval, NULL };
	char path[PATH_MAX];
	int r;

	r = ckpt_install_path("ckpt_coordinator", path, sizeof(path));
	if (r == 0 && access(path, X_OK) < 0)
		r = -errno;
	if (r < 0) {
		fprintf(stderr, "ckpt_launch: cannot find ckpt_coordinator at "
			"%s: %s\n", path, strerror(-r));
		return r;
	}
	r = ckpt_coord_spawn(path, l->addr, l->interval ? extra : NULL,
			     COORD_TIMEOUT_MS);
	if (r < 0 && r != -EADDRINUSE) {
		fprintf(stderr, "ckpt_launch: cannot start a coordinator on "
			"%s: %s\n", l->addr, strerror(-r));
		return r;
	}
	return ckpt_coord_connect(l->addr, COORD_TIMEOUT_MS);
}

static int send_interval(struct launch *l, int fd)
{
	char *text = NULL;
	int status = 0;
	int r = tool_command(fd, CKPT_CMD_INTERVAL, l->interval_s,
			     COORD_TIMEOUT_MS, &status, &text);

	if (r == 0 && status)
		r = -status;
	if (r < 0)
		fprintf(stderr, "ckpt_launch: cannot set the interval on the "
			"coordinator at %s: %s\n", l->addr, strerror(-r));
	free(text);
	return r;
}

/* Make sure a coordinator answers at l->addr; the probe connection is
 * closed (and CLOEXEC anyway) so PROGRAM does not inherit it. */
static int ensure_coordinator(struct launch *l)
{
	char secret[CKPT_SECRET_LEN + 1];
	int fd, r = 0;

	if (ckpt_cc_is_tcp_addr(l->addr)) {
		r = ckpt_secret_load(secret, sizeof(secret));
		if (r < 0) {
			fprintf(stderr, "ckpt_launch: cannot load the secret "
				"for TCP ($HOME/.ckpt/secret): %s\n",
				strerror(-r));
			return r;
		}
	}
	fd = ckpt_coord_connect(l->addr, COORD_TIMEOUT_MS);
	if (fd == -ENOENT || fd == -ECONNREFUSED) {
		fd = spawn_coordinator(l);
	} else if (fd >= 0 && l->interval) {
		r = send_interval(l, fd);
	}
	if (fd < 0) {
		fprintf(stderr, "ckpt_launch: no coordinator at %s: %s\n",
			l->addr, fd == -EACCES ? "it runs as another user" :
			tool_strerror(fd));
		return fd;
	}
	close(fd);
	return r;
}

static int set_preload(struct launch *l)
{
	const char *old = getenv("LD_PRELOAD");
	char *value;
	int r;

	if (old && strstr(old, l->lib))
		return 0;
	if (old && *old)
		r = asprintf(&value, "%s %s", l->lib, old);
	else
		r = asprintf(&value, "%s", l->lib);
	if (r < 0)
		return -ENOMEM;
	r = setenv("LD_PRELOAD", value, 1);
	free(value);
	return r < 0 ? -errno : 0;
}

static int set_environment(struct launch *l)
{
	/* the program is the process ckpt_restart waits for among
	 * several roots (CKPT_IMG_F_LAUNCHED) */
	if (setenv("CKPT_LAUNCHED", "1", 1) < 0 ||
	    setenv("CKPT_COORD", l->addr, 1) < 0 ||
	    setenv("CKPT_DIR", l->dir, 1) < 0 || set_preload(l) < 0) {
		fprintf(stderr, "ckpt_launch: cannot set the environment: %s\n",
			strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct launch l = { 0 };
	char found[PATH_MAX];
	int r;

	parse_args(argc, argv, &l);
	r = find_program(l.argv[0], found, sizeof(found));
	if (r < 0) {
		fprintf(stderr, "ckpt_launch: %s: %s\n", l.argv[0],
			r == -ENOENT ? "command not found" : strerror(-r));
		return 127;
	}
	warn_if_not_preloadable(found);
	if (resolve_ckptdir(&l) < 0 || find_libckpt(&l) < 0)
		return 1;
	if (tool_resolve_addr("ckpt_launch", l.coord, l.addr,
			      sizeof(l.addr)) < 0)
		return 1;
	if (ensure_coordinator(&l) < 0 || set_environment(&l) < 0)
		return 1;
	execvp(l.argv[0], l.argv);
	r = errno;
	fprintf(stderr, "ckpt_launch: cannot execute %s: %s\n", l.argv[0],
		strerror(r));
	return r == ENOENT ? 127 : 126;
}
