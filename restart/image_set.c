// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every image of the checkpoint (docs/restart.md, "Every image of the
 * checkpoint"): the images given to one ckpt_restart, once those of older
 * checkpoints are left out, must hold every process the checkpoint saved
 * on each host they come from. A process left out (an image deleted, a
 * glob that misses one, a file moved elsewhere) would leave its parent,
 * children and peers restarted without it: a parent whose waitpid fails,
 * children reparented, a pipe or connection that reads as closed. So the
 * restart stops before anything is done, unless --partial asks for just
 * these images.
 *
 * Each image records how many processes of its checkpoint ran on its host
 * (round_members, round_host; 0 when not recorded: a snapshot, an older
 * coordinator or libckpt). When any image given lacks it the check cannot
 * count a host and is skipped; so it is when a process is given twice.
 */
#include <stdio.h>
#include <string.h>

#include "image_check.h"

static int same_host(const struct ckpt_image_header *a,
		     const struct ckpt_image_header *b)
{
	return !strncmp(a->round_host, b->round_host, sizeof(a->round_host));
}

/* Whether every image carries its count, and no process is given twice
 * (two images of one pid: process_tree.c says so, more to the point). */
static int countable(const struct ckpt_image *imgs, int n)
{
	for (int i = 0; i < n; i++) {
		if (!imgs[i].hdr.round_members)
			return 0;
		for (int j = 0; j < i; j++)
			if (imgs[j].hdr.vpid == imgs[i].hdr.vpid)
				return 0;
	}
	return 1;
}

/* The images of imgs[i]'s host; 0 when an earlier image was of it (the
 * host is said once). */
static int count_host_once(const struct ckpt_image *imgs, int n, int i)
{
	int given = 0;

	for (int j = 0; j < n; j++) {
		if (!same_host(&imgs[i].hdr, &imgs[j].hdr))
			continue;
		if (j < i)
			return 0;
		given++;
	}
	return given;
}

static void say_missing(const struct ckpt_image *img, int given, int partial)
{
	const struct ckpt_image_header *h = &img->hdr;

	fprintf(stderr, "ckpt_restart: %s: checkpoint %llu of computation "
		"%016llx saved %u processes on host %.*s, the images given "
		"hold %d of them: %s missing (the restart script "
		"ckpt_restart_script.sh written with them lists them all)%s\n",
		partial ? "warning" : "error",
		(unsigned long long)h->generation,
		(unsigned long long)h->computation_id, h->round_members,
		(int)sizeof(h->round_host), h->round_host[0] ?
		h->round_host : "?", given,
		h->round_members - given == 1 ? "one image is" :
		"the others' images are", partial ?
		"; --partial: restarting only these" :
		"; nothing was restarted (--partial restarts only the images "
		"given)");
}

int image_set_check_complete(const struct ckpt_image *imgs, int n,
			     int partial)
{
	int missing = 0;

	if (!countable(imgs, n))
		return 0;
	for (int i = 0; i < n; i++) {
		int given = count_host_once(imgs, n, i);

		if (!given || (uint32_t)given >= imgs[i].hdr.round_members)
			continue;
		say_missing(&imgs[i], given, partial);
		missing = 1;
	}
	return missing && !partial ? -1 : 0;
}
