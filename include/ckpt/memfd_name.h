/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The name of a memfd from the path the kernel shows for it
 * ("/memfd:NAME (deleted)"), to make it again under the same name at a
 * restart (libckpt's files.c, ckpt_restart's restart_deleted_files.c): a
 * program sees it in /proc/self/fd and /proc/self/maps.
 */
#ifndef CKPT_MEMFD_NAME_H
#define CKPT_MEMFD_NAME_H

#include <string.h>

/* NAME into name (at most len - 1 bytes; the kernel's limit is 249);
 * 0 for a path that is not a memfd's. */
static inline int ckpt_memfd_name(const char *path, char *name, size_t len)
{
	const char *del = " (deleted)";
	size_t n, dl = strlen(del);

	if (strncmp(path, "/memfd:", 7))
		return 0;
	path += 7;
	n = strlen(path);
	if (n >= dl && !strcmp(path + n - dl, del))
		n -= dl;
	if (n >= len)
		n = len - 1;
	memcpy(name, path, n);
	name[n] = 0;
	return 1;
}

#endif /* CKPT_MEMFD_NAME_H */
