// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A program may hold every descriptor its soft RLIMIT_NOFILE allows (a
 * server at its limit, a program that opens until EMFILE); a checkpoint
 * then could not open even /proc/self/task. For the length of a round
 * the soft limit is raised by FD_HEADROOM, within the hard limit, and put
 * back when the round ends (unless the program changed it meanwhile).
 * Descriptors libckpt opened above the old limit stay valid. When the
 * soft limit is already the hard one there is no room to take: a round
 * that fails with EMFILE says so (fd_headroom_explain).
 */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include "internal.h"

#define FD_HEADROOM 32

static struct rlimit before;	/* the program's, while raised */
static rlim_t raised_to;	/* 0: not raised */

void fd_headroom_take(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) < 0 ||
	    (raised_to && r.rlim_cur == raised_to))
		return;
	/* raised_to of a round this memory was saved in, before a restart */
	raised_to = 0;
	if (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= r.rlim_max)
		return;
	before = r;
	r.rlim_cur = r.rlim_max - r.rlim_cur > FD_HEADROOM ?
		     r.rlim_cur + FD_HEADROOM : r.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &r) == 0)
		raised_to = r.rlim_cur;
}

void fd_headroom_give_back(void)
{
	struct rlimit r;

	if (!raised_to)
		return;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur == raised_to &&
	    r.rlim_max == before.rlim_max)
		setrlimit(RLIMIT_NOFILE, &before);
	raised_to = 0;
}

/* r: RLIMIT_NOFILE as the program set it, while a round has it raised
 * (what a checkpoint saves and a restart puts back). */
void fd_headroom_program_limit(struct rlimit *r)
{
	if (raised_to && r->rlim_cur == raised_to &&
	    r->rlim_max == before.rlim_max)
		*r = before;
}

/* err of a round that failed with EMFILE: why, and what helps. */
void fd_headroom_explain(int r, char *err, size_t errlen)
{
	struct rlimit lim;
	size_t n = strlen(err);

	if (r != -EMFILE || getrlimit(RLIMIT_NOFILE, &lim) < 0 ||
	    lim.rlim_cur == RLIM_INFINITY)
		return;
	ckpt_fmt(err + n, errlen - n, " (the program holds the %llu "
		 "descriptors its RLIMIT_NOFILE allows, and its hard limit "
		 "leaves ckpt none: raise it, e.g. ulimit -Hn)",
		 (unsigned long long)lim.rlim_cur);
}
