// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_check: whether the coordinator address and the checkpoint
 * directory that ckpt_launch would use (the same options, environment
 * and defaults) are usable by this user.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "ckpt/coord_client.h"
#include "../../protocol/client_internal.h"
#include "check.h"

#define CHECK_CONNECT_MS	2000

/* Where ckpt_launch would start a coordinator on a Unix socket. */
static void check_socket_dir(struct check *c, const char *addr)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", addr);
	if (access(dirname(dir), W_OK | X_OK) == 0) {
		snprintf(c->detail, sizeof(c->detail), "no coordinator runs at "
			 "%s; ckpt_launch starts one there", addr);
		return;
	}
	c->available = false;
	snprintf(c->detail, sizeof(c->detail), "no coordinator runs at %s, "
		 "and none can be started there: %s: %s", addr, dir,
		 strerror(errno));
}

void check_coordinator(struct check *c, const struct check_places *p)
{
	char addr[512];
	int r = ckpt_coord_resolve_addr(p->coord, addr, sizeof(addr)), fd;

	c->name = "coordinator";
	c->required = true;
	snprintf(c->without, sizeof(c->without), "ckpt_launch and "
		 "ckpt_restart fail: choose another address (--coord, "
		 "$CKPT_COORD)");
	if (r < 0) {
		snprintf(c->detail, sizeof(c->detail), "address %s: %s",
			 p->coord ? p->coord : getenv("CKPT_COORD") ?
			 getenv("CKPT_COORD") : "(default)", strerror(-r));
		return;
	}
	snprintf(c->value, sizeof(c->value), "%s", addr);
	c->available = true;
	fd = ckpt_coord_connect(addr, CHECK_CONNECT_MS);
	if (fd >= 0) {
		close(fd);
		snprintf(c->detail, sizeof(c->detail), "a coordinator answers "
			 "at %s", addr);
	} else if (fd != -ECONNREFUSED && fd != -ENOENT) {
		c->available = false;
		snprintf(c->detail, sizeof(c->detail), "%s: %s", addr,
			 strerror(-fd));
	} else if (ckpt_cc_is_tcp_addr(addr)) {
		snprintf(c->detail, sizeof(c->detail), "no coordinator answers "
			 "at %s; ckpt_launch starts one listening there",
			 addr);
	} else {
		check_socket_dir(c, addr);
	}
	if (c->available)
		c->without[0] = '\0';
}

/* Make and remove a file there: access() says yes to root on a
 * read-only file system. */
static int try_create(const char *dir)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "%s/.ckpt_check.XXXXXX", dir) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	close(fd);
	unlink(path);
	return 0;
}

static void describe_dir(struct check *c, const char *dir)
{
	struct statvfs vfs;
	struct stat st;
	int r;

	if (stat(dir, &st) < 0) {
		snprintf(c->detail, sizeof(c->detail), "%s: %s", dir,
			 strerror(errno));
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(c->detail, sizeof(c->detail), "%s: not a directory",
			 dir);
		return;
	}
	r = try_create(dir);
	if (r < 0) {
		snprintf(c->detail, sizeof(c->detail), "%s: cannot create "
			 "files there: %s", dir, strerror(-r));
		return;
	}
	c->available = true;
	if (statvfs(dir, &vfs) == 0)
		snprintf(c->detail, sizeof(c->detail), "%s: writable, %.1f GiB "
			 "free", dir, (double)vfs.f_bavail * vfs.f_frsize /
			 (1 << 30));
	else
		snprintf(c->detail, sizeof(c->detail), "%s: writable", dir);
}

void check_ckptdir(struct check *c, const struct check_places *p)
{
	const char *dir = p->ckptdir;
	char real[PATH_MAX];

	if (!dir || !*dir)
		dir = getenv("CKPT_DIR");
	if (!dir || !*dir)
		dir = ".";
	c->name = "ckptdir";
	c->required = true;
	snprintf(c->value, sizeof(c->value), "%s",
		 realpath(dir, real) ? real : dir);
	describe_dir(c, c->value);
	if (!c->available)
		snprintf(c->without, sizeof(c->without), "checkpoints fail: "
			 "images cannot be written (choose --ckptdir or "
			 "$CKPT_DIR)");
}
