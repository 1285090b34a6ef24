// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Install-relative paths: tools find their siblings and libckpt.so from
 * /proc/self/exe, so the build tree and PREFIX work the same way.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/coord_client.h"
#include "client_internal.h"

int ckpt_install_path(const char *rel, char *out, size_t len)
{
	char exe[4096];
	ssize_t n;
	char *slash;

	if (!rel || !out || !len)
		return -EINVAL;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(exe) - 1)
		return -ENAMETOOLONG;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	return ckpt_cc_path_join(exe[0] ? exe : "/", rel, out, len);
}
