// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The per-user secret that authenticates TCP connections to a coordinator
 * ($HOME/.ckpt/secret, 0600). Created on first use with link() so two
 * processes racing to create it agree on one value.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/coord_client.h"
#include "client_internal.h"

static int secret_dir(char *out, size_t len)
{
	const char *home = getenv("HOME");
	struct ckpt_cc_str s;

	if (!home || home[0] != '/')
		return -ENOENT;
	ckpt_cc_str_init(&s, out, len);
	ckpt_cc_str_add(&s, home);
	ckpt_cc_str_add(&s, "/.ckpt");
	return s.truncated ? -ENAMETOOLONG : 0;
}

static int read_secret(const char *path, char *out)
{
	struct stat st;
	ssize_t n;
	int fd, i;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		close(fd);
		ckpt_cc_report("ckpt: refusing secret file ", path,
			       ": not owned by us or readable by others",
			       " (chmod 0600 it)");
		return -EPERM;
	}
	do {
		n = read(fd, out, CKPT_SECRET_LEN);
	} while (n < 0 && errno == EINTR);
	close(fd);
	if (n != CKPT_SECRET_LEN)
		goto bad;
	for (i = 0; i < CKPT_SECRET_LEN; i++)
		if (!((out[i] >= '0' && out[i] <= '9') ||
		      (out[i] >= 'a' && out[i] <= 'f')))
			goto bad;
	out[CKPT_SECRET_LEN] = '\0';
	return 0;
bad:
	ckpt_cc_report("ckpt: secret file ", path,
		       ": not 32 lowercase hex digits", " (delete it)");
	return -EINVAL;
}

static int write_new_secret(const char *tmp)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[CKPT_SECRET_LEN / 2];
	char text[CKPT_SECRET_LEN + 1];
	ssize_t n;
	size_t i;
	int fd, r = 0;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	for (i = 0; i < sizeof(raw); i++) {
		text[2 * i] = hex[raw[i] >> 4];
		text[2 * i + 1] = hex[raw[i] & 15];
	}
	text[CKPT_SECRET_LEN] = '\n';
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	n = write(fd, text, sizeof(text));
	if (n != (ssize_t)sizeof(text))
		r = n < 0 ? -errno : -EIO;
	else if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* Write to a private temporary name, then link() it into place: link
 * fails with EEXIST if another process won, and then we use its secret. */
static int create_secret(const char *dir, const char *path)
{
	char tmp[4096];
	struct ckpt_cc_str s;
	int r;

	ckpt_cc_str_init(&s, tmp, sizeof(tmp));
	ckpt_cc_str_add(&s, dir);
	ckpt_cc_str_add(&s, "/secret.tmp.");
	ckpt_cc_str_add_u64(&s, (uint64_t)getpid());
	if (s.truncated)
		return -ENAMETOOLONG;
	unlink(tmp);
	r = write_new_secret(tmp);
	if (r == 0 && link(tmp, path) < 0 && errno != EEXIST)
		r = -errno;
	unlink(tmp);
	return r;
}

int ckpt_secret_load(char *out, size_t len)
{
	char dir[4096], path[4096];
	struct ckpt_cc_str s;
	int r;

	if (!out || len < CKPT_SECRET_LEN + 1)
		return -EINVAL;
	r = secret_dir(dir, sizeof(dir));
	if (r < 0)
		return r;
	ckpt_cc_str_init(&s, path, sizeof(path));
	ckpt_cc_str_add(&s, dir);
	ckpt_cc_str_add(&s, "/secret");
	if (s.truncated)
		return -ENAMETOOLONG;
	r = read_secret(path, out);
	if (r != -ENOENT)
		return r;
	r = ckpt_cc_make_private_dir(dir);
	if (r < 0)
		return r;
	r = create_secret(dir, path);
	if (r < 0)
		return r;
	return read_secret(path, out);
}
