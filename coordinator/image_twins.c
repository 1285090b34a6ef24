// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Two members of a round that would write one image: copies of one
 * process under one coordinator (its images restarted while the original
 * still runs, or restarted twice). Both keep the process's unique id, so
 * their temporaries differ only in the writer's pid
 * (".ckpt_<prog>_<id>.img.tmp.<pid>") and both would be renamed over the
 * same image: whichever came last would win, an image set mixing two
 * copies. The round fails instead, when the second one says WRITTEN,
 * before anything is committed; every previous image stays.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ckpt/image_names.h"
#include "coordinator.h"

/* The length of tmp up to its ".tmp.<pid>": the part copies share. */
static size_t shared_stem_len(const char *tmp)
{
	const char *last = NULL;

	for (const char *p = tmp; (p = strstr(p, ".tmp.")); p++)
		last = p;
	return last ? (size_t)(last - tmp) : strlen(tmp);
}

static bool same_image(const struct conn *a, const struct conn *b)
{
	const char *ta = a->proc.image_tmp, *tb = b->proc.image_tmp;
	size_t n = shared_stem_len(ta);

	return ta[0] && n == shared_stem_len(tb) && !strncmp(ta, tb, n) &&
	       !strcmp(a->proc.hello.hostname, b->proc.hello.hostname);
}

/* Another member of this round whose image is c's image, or NULL. */
static struct conn *image_twin(struct coordinator *co, struct conn *c)
{
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *o = co->conns[i];

		if (o != c && round_in(co, o) && same_image(c, o))
			return o;
	}
	return NULL;
}

int round_check_image_twin(struct coordinator *co, struct conn *c,
			   char *what, size_t len)
{
	const struct ckpt_msg_hello *h = &c->proc.hello;
	struct conn *twin = image_twin(co, c);
	const char *slash = strrchr(c->proc.image_tmp, '/');
	char name[256], image[300];

	if (!twin)
		return 0;
	proc_name(twin, name, sizeof(name));
	image_final_name(image, sizeof(image), h->program, h->unique_id, 0, 0);
	snprintf(what, len, "it and %s are copies of one process (its images "
		 "restarted while it still runs, or restarted twice) and "
		 "would both write %.*s/%s; nothing was committed: end one "
		 "copy, or restart the copy with its own --ckptdir or --coord",
		 name, slash ? (int)(slash - c->proc.image_tmp) : 1,
		 slash ? c->proc.image_tmp : ".", image);
	return -EEXIST;
}
