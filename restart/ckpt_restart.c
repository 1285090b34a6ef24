// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_restart [--coord ADDR] [--ckptdir DIR] [--cpu-compat] [--trust-image]
 *              [--copy] [--stopped] [--peer-hosts IP,...]
 *              [--meet-timeout SECONDS]
 *              [--host-map OLD=NEW,...] [--check] IMAGE...
 *
 * Validate every image completely (and that it is the caller's own:
 * image_trust.c), make sure a coordinator runs, then exec
 * the freestanding loader for each image: in place for one image (the
 * restarted program keeps our pid slot, terminal and stdio, and our caller
 * can wait for it); several images (or pipes to hand over) go through
 * process_tree.c, which forks the saved process tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ckpt/coord_client.h"
#include "image_check.h"
#include "host_map.h"
#include "image_trust.h"
#include "loader_exec.h"
#include "memory_mode.h"
#include "process_tree.h"
#include "restart_tcp.h"

#define COORD_TIMEOUT_MS	10000

struct options {
	const char *coord;
	const char *ckpt_dir;
	unsigned check_flags;		/* IMAGE_CPU_COMPAT */
	int trust_image;		/* --trust-image */
	int check_only;			/* --check */
	int partial;			/* --partial */
	int keep_made_files;		/* --keep-files-made-after */
	char **images;
	int nimages;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: ckpt_restart [--coord ADDR] [--ckptdir DIR] "
		"[--cpu-compat] [--trust-image]\n"
		"                    [--copy] [--stopped] [--peer-hosts IP,...] "
		"[--partial] IMAGE...\n"
		"Restart checkpointed processes from their images.\n\n"
		"  --coord ADDR    coordinator to join (/path or HOST:PORT);\n"
		"                  default $CKPT_COORD or the per-user socket;\n"
		"                  started if none answers\n"
		"  --ckptdir DIR   where later checkpoints go (default: the\n"
		"                  directory saved in the image)\n"
		"  --cpu-compat    restart on a CPU lacking register state the\n"
		"                  checkpointing CPU had (e.g. AVX-512), if no\n"
		"                  saved thread holds any; you guarantee the\n"
		"                  program never uses it (e.g. it was started\n"
		"                  with GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,\n"
		"                  -AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,\n"
		"                  -AVX512ER,-AVX512PF)\n"
		"  --copy          copy the memory into the process instead\n"
		"                  of mapping it from the image (the default\n"
		"                  maps it: the program runs after reading\n"
		"                  only its metadata; docs/restart.md)\n"
		"  --stopped       the restored process stops itself (SIGSTOP)\n"
		"                  once its threads are back, before any runs\n"
		"                  program code: a debugger attaches, then\n"
		"                  continues it (docs/reversible-debugging.md)\n"
		"  --peer-hosts IP,...\n"
		"                  the addresses of the computation's other\n"
		"                  hosts: a TCP connection to one of them whose\n"
		"                  other end is not among IMAGEs is reconnected\n"
		"                  with the ckpt_restart started there at the\n"
		"                  same time (docs/multi-host.md)\n"
		"  --meet-timeout SECONDS\n"
		"                  how long to wait for the other hosts'\n"
		"                  ckpt_restarts (1-3600; default 30 for TCP\n"
		"                  connections, 15 for UDP datagrams); an end\n"
		"                  whose partner has not come by then reads\n"
		"                  as closed by its peer\n"
		"  --host-map OLD=NEW,...\n"
		"                  the computation runs on other hosts now:\n"
		"                  every socket address of host address OLD\n"
		"                  (its own, its peer's) becomes NEW, same\n"
		"                  port; a moved own address must be one of\n"
		"                  this host's, else nothing is restarted\n"
		"  --check         check the images (and --host-map) and exit,\n"
		"                  restarting nothing\n"
		"  --keep-files-made-after\n"
		"                  leave in place the files the computation's\n"
		"                  processes made exclusively (O_EXCL, mkstemp)\n"
		"                  after the checkpoint, which the restart\n"
		"                  removes otherwise: a lock file left by a\n"
		"                  process killed after it (docs/restart.md)\n"
		"  --partial       restart the images given even when the\n"
		"                  checkpoint saved more processes on their\n"
		"                  hosts (without it: an error, nothing is\n"
		"                  restarted; docs/restart.md)\n"
		"  --trust-image   restart an image that is not your own file,\n"
		"                  or that its group or other users may write:\n"
		"                  an image is code, and it runs as you (restart\n"
		"                  never changes uid or gid); give it only if\n"
		"                  you trust everyone who could have written it\n"
		"  --help          show this help\n"
		"  --version       show the version\n\n"
		"The images of one checkpoint come back as the process tree\n"
		"they were, connected by their pipes. One root process\n"
		"replaces ckpt_restart (same pid slot, terminal and stdio);\n"
		"with several roots ckpt_restart waits for the program\n"
		"ckpt_launch started and exits with its status (daemons it\n"
		"left go on), or, without it among the images, for all, with\n"
		"the first failure's status. On a terminal, the restart of\n"
		"one image shows its progress on stderr.\n");
}

/* --meet-timeout SECONDS, 1 to 3600 */
static int parse_meet_timeout(const char *arg)
{
	char *end;
	long s;

	errno = 0;
	s = strtol(arg, &end, 10);
	if (errno || end == arg || *end || s < 1 || s > 3600) {
		fprintf(stderr, "ckpt_restart: --meet-timeout %s: expected a "
			"number of seconds from 1 to 3600\n", arg);
		return -1;
	}
	restart_meet_timeout_ms = s * 1000;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "coord", required_argument, NULL, 'c' },
		{ "ckptdir", required_argument, NULL, 'd' },
		{ "cpu-compat", no_argument, NULL, 'C' },
		{ "trust-image", no_argument, NULL, 'T' },
		{ "peer-hosts", required_argument, NULL, 'P' },
		{ "meet-timeout", required_argument, NULL, 'W' },
		{ "host-map", required_argument, NULL, 'H' },
		{ "check", no_argument, NULL, 'K' },
		{ "partial", no_argument, NULL, 'A' },
		{ "keep-files-made-after", no_argument, NULL, 'F' },
		{ "copy", no_argument, NULL, 'M' },
		{ "stopped", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->coord = optarg;
			break;
		case 'd':
			o->ckpt_dir = optarg;
			break;
		case 'C':
			o->check_flags |= IMAGE_CPU_COMPAT;
			break;
		case 'T':
			o->trust_image = 1;
			break;
		case 'M':
			restart_copy_memory = 1;
			break;
		case 'S':
			restart_stopped = 1;
			break;
		case 'P':
			if (restart_peer_hosts_check(optarg))
				return -EINVAL;
			restart_peer_hosts = optarg;
			break;
		case 'W':
			if (parse_meet_timeout(optarg))
				return -EINVAL;
			break;
		case 'H':
			if (restart_host_map_parse(optarg))
				return -EINVAL;
			break;
		case 'K':
			o->check_only = 1;
			break;
		case 'A':
			o->partial = 1;
			break;
		case 'F':
			o->keep_made_files = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("ckpt_restart %s\n", CKPT_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	o->images = argv + optind;
	o->nimages = argc - optind;
	if (o->nimages == 0) {
		fprintf(stderr, "ckpt_restart: no image given\n");
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

/* The restored program restores its cwd: hand over absolute paths. */
static int absolute_path(const char *path, char *out, size_t len)
{
	char cwd[PATH_MAX];

	if (path[0] == '/' || !path[0]) {
		if ((size_t)snprintf(out, len, "%s", path) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	if ((size_t)snprintf(out, len, "%s/%s", cwd, path) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Before anything is done on its behalf (files put back, a coordinator
 * joined, its code run): an image someone else could have written runs
 * only with --trust-image, and then as us all the same. */
static int check_trust(const struct ckpt_image *img, int trust_image)
{
	char why[1024], caller[300];
	int err = image_trust_check(img->fd, why, sizeof(why));

	if (err && err != -EPERM)
		fprintf(stderr, "ckpt_restart: %s: %s\n", img->path, why);
	if (err != -EPERM)
		return err;
	image_trust_caller(caller, sizeof(caller));
	if (trust_image) {
		fprintf(stderr, "ckpt_restart: %s: warning: %s; restarting it "
			"anyway (--trust-image), as you (%s): restart never "
			"changes uid or gid\n", img->path, why, caller);
		return 0;
	}
	fprintf(stderr, "ckpt_restart: %s: refusing to restart it: %s. An "
		"image is code: it would run as you (%s). If you trust its "
		"owner and everyone who could write it, use ckpt_restart "
		"--trust-image\n", img->path, why, caller);
	return err;
}

static int validate_image(struct ckpt_image *img, const char *path,
			  const struct options *o)
{
	int err;

	/* Not close-on-exec: the loader reads the memory data from it. */
	err = image_open(img, path, 0);
	if (!err) {
		err = check_trust(img, o->trust_image);
		if (err)
			return err;
		err = image_check_host(img, o->check_flags);
	}
	if (!err)
		err = image_verify_restart_data(img);
	if (err)
		fprintf(stderr, "ckpt_restart: %s: %s\n", path, img->err);
	else if (img->warning[0])
		fprintf(stderr, "ckpt_restart: %s: %s\n", path, img->warning);
	return err;
}

static int ensure_coordinator(const char *explicit_addr, char *addr,
			      size_t len)
{
	int fd;

	fd = ckpt_coord_resolve_addr(explicit_addr, addr, len);
	if (fd < 0) {
		fprintf(stderr, "ckpt_restart: resolving the coordinator "
			"address failed: %s\n", strerror(-fd));
		return fd;
	}
	fd = ckpt_coord_connect_or_spawn(addr, COORD_TIMEOUT_MS);
	if (fd < 0) {
		fprintf(stderr, "ckpt_restart: coordinator %s: cannot connect "
			"or start it: %s\n", addr, strerror(-fd));
		return fd;
	}
	close(fd);
	return 0;
}

/* Returns only on failure, after printing why. */
void exec_loader(struct ckpt_image *img, const char *coord,
		 const char *ckpt_dir, int plan_fd, int keep_fd_end)
{
	char path[PATH_MAX], err[1024];
	int ret;

	ret = absolute_path(img->path, path, sizeof(path));
	if (ret) {
		fprintf(stderr, "ckpt_restart: %s: making the path absolute "
			"failed: %s\n", img->path, strerror(-ret));
		return;
	}
	fflush(NULL);
	loader_exec(img, path, coord, ckpt_dir, plan_fd, keep_fd_end, err,
		    sizeof(err));
	fprintf(stderr, "ckpt_restart: %s: %s\n", img->path, err);
}

/* Pipes, socket pairs, FIFOs and ptys are made by process_tree.c, even for one
 * image (a pipe inside one process), and so is a new session. */
static int has_pipes(const struct ckpt_image *img)
{
	for (uint32_t i = 0; i < img->hdr.nfds; i++)
		if (img->fds[i].kind == CKPT_FD_PIPE ||
		    img->fds[i].kind == CKPT_FD_UNIX_STREAM ||
		    img->fds[i].kind == CKPT_FD_UNIX_DGRAM ||
		    img->fds[i].kind == CKPT_FD_UNIX_SEQPACKET ||
		    img->fds[i].kind == CKPT_FD_SOCKET_LISTEN ||
		    img->fds[i].kind == CKPT_FD_SOCKET_BOUND ||
		    img->fds[i].kind == CKPT_FD_SOCKET_OUTSIDE ||
		    img->fds[i].kind == CKPT_FD_PTY_MASTER ||
		    img->fds[i].kind == CKPT_FD_FIFO)
			return 1;
	return 0;
}

/* Keep 0, 1, 2 taken, so that an image never lands on a stdio number the
 * loader keeps open for the restored program. */
static void ensure_stdio_open(void)
{
	int fd;

	do {
		fd = open("/dev/null", O_RDWR);
	} while (fd >= 0 && fd < 3);
	if (fd >= 0)
		close(fd);
}

/* The image taken last: its computation's newest checkpoint is the one
 * restarted. */
static const struct ckpt_image *latest_image(const struct ckpt_image *imgs,
					     int n)
{
	const struct ckpt_image *latest = &imgs[0];

	for (int i = 1; i < n; i++)
		if (imgs[i].hdr.ckpt_time_ns > latest->hdr.ckpt_time_ns)
			latest = &imgs[i];
	return latest;
}

static void say_left_out(const struct ckpt_image *img, uint64_t computation,
			 uint64_t newest)
{
	if (img->hdr.computation_id != computation && !img->hdr.computation_id)
		fprintf(stderr, "ckpt_restart: leaving out %s: an image of an "
			"older ckpt (no computation id, checkpoint %llu), "
			"older than the newest checkpoint given (%016llx, "
			"checkpoint %llu)\n", img->path,
			(unsigned long long)img->hdr.generation,
			(unsigned long long)computation,
			(unsigned long long)newest);
	else if (img->hdr.computation_id != computation)
		fprintf(stderr, "ckpt_restart: leaving out %s: it belongs to "
			"another computation (%016llx, checkpoint %llu) than "
			"the newest checkpoint given (%016llx, checkpoint "
			"%llu); restart it with its own images\n", img->path,
			(unsigned long long)img->hdr.computation_id,
			(unsigned long long)img->hdr.generation,
			(unsigned long long)computation,
			(unsigned long long)newest);
	else
		fprintf(stderr, "ckpt_restart: leaving out %s: it is from "
			"checkpoint %llu, the newest given is %llu (the "
			"process had exited or exec'd by then)\n", img->path,
			(unsigned long long)img->hdr.generation,
			(unsigned long long)newest);
}

/* The images of one checkpoint: given images of several (ckpt_*.img in a
 * directory where processes exited or exec'd since an older checkpoint,
 * or where another computation checkpoints too), keep those of the
 * newest checkpoint of the computation that checkpointed last, and say
 * which were left out. Checkpoint numbers only grow in a computation,
 * also across restarts (the coordinator continues from the restored
 * images' number). Returns the number kept, moved to the front. */
static int keep_newest_checkpoint(struct ckpt_image *imgs, int n)
{
	uint64_t computation = latest_image(imgs, n)->hdr.computation_id;
	uint64_t newest = 0;
	int kept = 0;

	for (int i = 0; i < n; i++)
		if (imgs[i].hdr.computation_id == computation &&
		    imgs[i].hdr.generation > newest)
			newest = imgs[i].hdr.generation;
	for (int i = 0; i < n; i++) {
		if (imgs[i].hdr.computation_id == computation &&
		    imgs[i].hdr.generation == newest) {
			imgs[kept++] = imgs[i];
			continue;
		}
		say_left_out(&imgs[i], computation, newest);
		image_close(&imgs[i]);
	}
	return kept;
}

int main(int argc, char **argv)
{
	char coord[512], ckpt_dir[PATH_MAX] = "";
	struct options o = { 0 };
	struct ckpt_image *imgs;
	int i, failed = 0;

	ensure_stdio_open();
	if (parse_options(argc, argv, &o))
		return 1;
	if (o.ckpt_dir && absolute_path(o.ckpt_dir, ckpt_dir,
					sizeof(ckpt_dir))) {
		fprintf(stderr, "ckpt_restart: --ckptdir %s: path too long\n",
			o.ckpt_dir);
		return 1;
	}
	imgs = calloc(o.nimages, sizeof(*imgs));
	if (!imgs) {
		fprintf(stderr, "ckpt_restart: out of memory\n");
		return 1;
	}
	for (i = 0; i < o.nimages; i++)
		if (validate_image(&imgs[i], o.images[i], &o))
			failed = 1;
	if (failed)
		return 1;
	o.nimages = keep_newest_checkpoint(imgs, o.nimages);
	if (image_set_check_complete(imgs, o.nimages, o.partial) < 0)
		return 1;
	if (restart_host_map_check(imgs, o.nimages) < 0)
		return 1;
	if (o.check_only)
		return 0;
	if (!o.keep_made_files)
		restart_remove_created_after(imgs, o.nimages);
	if (restart_put_back_files(imgs, o.nimages) < 0)
		return 1;
	if (ensure_coordinator(o.coord, coord, sizeof(coord)))
		return 1;
	if (o.nimages == 1 && !has_pipes(&imgs[0]) &&
	    !restart_shm_needed(&imgs[0]) && !restart_peer_hosts &&
	    !restart_host_map_given() && !root_wants_terminal(&imgs[0])) {
		exec_loader(&imgs[0], coord, ckpt_dir, 0, 0);
		return 1;
	}
	return restart_tree(imgs, o.nimages, coord, ckpt_dir);
}
