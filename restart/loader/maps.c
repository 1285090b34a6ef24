// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Parse our own /proc/self/maps: the loader blob, the kernel's [stack] and
 * its special mappings, nothing else for an ELF without interpreter.
 * Lines: "start-end perms offset dev inode   name".
 */
#include "loader.h"

static char maps_buf[64 * 1024];

static const char *parse_hex(const char *p, uint64_t *out)
{
	uint64_t v = 0;
	unsigned d;

	for (;; p++) {
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else
			break;
		v = (v << 4) | d;
	}
	*out = v;
	return p;
}

/* Skip n blank-separated fields. */
static const char *skip_fields(const char *p, int n)
{
	while (n--) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	while (*p == ' ')
		p++;
	return p;
}

static const char *parse_line(const char *p, struct maps_entry *e)
{
	size_t n = 0;

	p = parse_hex(p, &e->start);
	if (*p++ != '-')
		loader_fail("reading /proc/self/maps failed: bad line");
	p = parse_hex(p, &e->end);
	p = skip_fields(p, 4);	/* perms offset dev inode */
	while (*p && *p != '\n') {
		if (n + 1 < sizeof(e->name))
			e->name[n++] = *p;
		p++;
	}
	e->name[n] = '\0';
	return *p ? p + 1 : p;
}

void maps_read(struct loader *l)
{
	size_t len = 0;
	const char *p;
	long fd, n;

	fd = sys_openat(AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		loader_fail("opening /proc/self/maps failed: %s",
			    errno_text(fd));
	while ((n = sys_read(fd, maps_buf + len,
			     sizeof(maps_buf) - 1 - len)) != 0) {
		if (n == -4)	/* EINTR */
			continue;
		if (n < 0)
			loader_fail("reading /proc/self/maps failed: %s",
				    errno_text(n));
		len += n;
		if (len == sizeof(maps_buf) - 1)
			loader_fail("reading /proc/self/maps failed: more than "
				    "%zu bytes", len);
	}
	sys_close(fd);
	maps_buf[len] = '\0';
	for (p = maps_buf, l->nmaps = 0; *p; l->nmaps++) {
		if (l->nmaps == LOADER_MAX_MAPS)
			loader_fail("reading /proc/self/maps failed: more than "
				    "%d mappings", LOADER_MAX_MAPS);
		p = parse_line(p, &l->maps[l->nmaps]);
	}
}
