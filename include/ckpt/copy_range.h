/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Copy `size` bytes at offset `off` of one file to the current position
 * of another: saved content out of an image (libckpt and ckpt_restart).
 * No allocation. 0 or -errno (-EIO for a short read or write).
 */
#ifndef CKPT_COPY_RANGE_H
#define CKPT_COPY_RANGE_H

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

static inline int ckpt_copy_range(int from, uint64_t off, uint64_t size,
				  int to)
{
	char buf[65536];

	while (size) {
		ssize_t n = pread(from, buf, size < sizeof(buf) ? size :
					sizeof(buf), (off_t)off);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		if (write(to, buf, n) != n)
			return -EIO;
		off += n;
		size -= n;
	}
	return 0;
}

#endif /* CKPT_COPY_RANGE_H */
