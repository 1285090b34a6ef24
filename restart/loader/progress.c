// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The progress line of a long restart: when ckpt_restart restarts one
 * image in place with stderr on a terminal (LOADER_ARG_PROGRESS), the
 * bytes of memory restored so far (read, decompressed or mapped and
 * checked), the rate and the time left, redrawn on stderr every
 * LOADER_ARG_PROGRESS ms (CKPT_PROGRESS_MS, 250 by default) once the
 * restart has taken that long; cleared before the program runs or a
 * message is printed. Nothing otherwise.
 */
#include <stdarg.h>
#include "loader.h"

#define MIB			(1024 * 1024)

struct loader_timespec {
	long sec, nsec;
};

static struct {
	int on, drawn;
	uint64_t total, done;
	uint64_t start_ns, last_ns, every_ns;
	const char *image;
} progress;

static uint64_t now_ns(void)
{
	struct loader_timespec ts = { 0, 0 };

	sys_clock_gettime_monotonic(&ts);
	return (uint64_t)ts.sec * 1000000000ULL + (uint64_t)ts.nsec;
}

void progress_start(const struct loader *l, uint64_t every_ms)
{
	if (!every_ms)
		return;
	progress.every_ns = every_ms * 1000000ULL;
	for (uint32_t i = 0; i < l->hdr.nextents; i++)
		progress.total += l->extents[i].len;
	progress.on = progress.total > 0;
	progress.start_ns = progress.last_ns = now_ns();
	progress.image = l->image_path;
}

static void draw(uint64_t elapsed_ns)
{
	static char line[512];
	uint64_t ms = elapsed_ns / 1000000, rate, left;
	size_t n;

	if (progress.done > progress.total)	/* mapped, then copied over */
		progress.done = progress.total;
	rate = ms ? progress.done / ms * 1000 : 0;	/* bytes/s */
	left = rate && progress.total > progress.done ?
	       (progress.total - progress.done + rate - 1) / rate : 0;
	n = fmt_v_args(line, sizeof(line), "\r\033[Kckpt_restart: %s: %lu of "
		       "%lu MiB restored, %lu MiB/s, ~%lu s left",
		       progress.image, progress.done / MIB,
		       progress.total / MIB, rate / MIB, left);
	sys_write(2, line, n);
	progress.drawn = 1;
}

void progress_add(uint64_t bytes)
{
	uint64_t t;

	if (!progress.on)
		return;
	progress.done += bytes;
	t = now_ns();
	if (t - progress.last_ns < progress.every_ns)
		return;
	progress.last_ns = t;
	draw(t - progress.start_ns);
}

/* Before the program runs, and before any message of the loader. */
void progress_clear(void)
{
	if (progress.drawn)
		sys_write(2, "\r\033[K", 4);
	progress.drawn = 0;
	progress.on = 0;
}
