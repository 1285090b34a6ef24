// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The processes one ckpt_restart brings back join one by one, each once
 * its memory and files are restored; a checkpoint asked for in between
 * would find only some of them connected, and neither a child nor a
 * parent that has not joined yet is necessarily a child of a member
 * (round_members.c looks only for children). So each restarted process
 * says in its HELLO which restart it came from (the restart plan's inode
 * on its host) and how many processes that restart brings back; a round
 * writes no image while a restart is incomplete, for at most
 * COORD_RESTART_JOIN_TIMEOUT_MS after its first process joined (less than
 * the suspend phase's timeout).
 */
#include <stdio.h>
#include <string.h>
#include "coordinator.h"

static struct restart_group *find_group(struct coordinator *co,
					const struct ckpt_msg_hello *h)
{
	for (int i = 0; i < co->ngroups; i++) {
		struct restart_group *g = &co->groups[i];

		if (g->id == h->restart_group &&
		    !strcmp(g->host, h->hostname))
			return g;
	}
	return NULL;
}

static void forget_group(struct coordinator *co, struct restart_group *g)
{
	*g = co->groups[--co->ngroups];
}

static struct restart_group *new_group(struct coordinator *co,
				       const struct ckpt_msg_hello *h)
{
	struct restart_group *g;

	if (co->ngroups == COORD_MAX_RESTART_GROUPS) {
		coord_log("more than %d restarts in progress at once; the "
			  "next checkpoints do not wait for this one",
			  COORD_MAX_RESTART_GROUPS);
		return NULL;
	}
	g = &co->groups[co->ngroups++];
	memset(g, 0, sizeof(*g));
	g->id = h->restart_group;
	g->size = h->restart_group_size;
	g->first_ms = now_ms();
	snprintf(g->host, sizeof(g->host), "%s", h->hostname);
	return g;
}

void restart_groups_on_join(struct coordinator *co, const struct conn *c)
{
	const struct ckpt_msg_hello *h = &c->proc.hello;
	struct restart_group *g;

	if (!(h->flags & CKPT_HELLO_F_RESTART_GROUP) || !h->restart_group ||
	    h->restart_group_size < 2 ||
	    h->restart_group_size > COORD_MAX_RESTART_GROUP_SIZE)
		return;
	g = find_group(co, h);
	if (!g)
		g = new_group(co, h);
	if (g && ++g->joined >= g->size)
		forget_group(co, g);
}

/* 1: no restart still joining; 0: look again at *next_check_ms. A
 * restart still incomplete COORD_RESTART_JOIN_TIMEOUT_MS after its first
 * process joined is forgotten: a restored process may exit before it
 * joins (a `sleep` that ends), so the round goes on with those that did. */
int restart_groups_complete(struct coordinator *co, int64_t *next_check_ms)
{
	int64_t now = now_ms(), wait_ms = COORD_RESTART_JOIN_TIMEOUT_MS;
	int waiting = 0;

	if (wait_ms > co->phase_timeout_ms / 2)	/* a short --phase-timeout */
		wait_ms = co->phase_timeout_ms / 2;
	for (int i = 0; i < co->ngroups; ) {
		struct restart_group *g = &co->groups[i];

		if (now < g->first_ms + wait_ms) {
			waiting++;
			i++;
			continue;
		}
		coord_log("a restart of %u processes on host %s is incomplete "
			  "after %.1f s (%u joined; the others exited or are "
			  "still restoring); no longer waited for", g->size,
			  g->host[0] ? g->host : "?", wait_ms / 1000.0,
			  g->joined);
		forget_group(co, g);
	}
	if (waiting)
		*next_check_ms = now + COORD_JOIN_CHECK_MS;
	return waiting == 0;
}
