// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_inspect IMAGE...: the processes of the images as a tree, each
 * under the image of its parent (vppid = the parent's vpid, both virtual
 * pids, the same across restarts); a process whose parent has no image
 * among them is a root (inspect_tree.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "inspect_tree.h"

#define TREE_DEPTH_MAX 64

int inspect_tree_add(struct inspect_tree *t, const struct ckpt_image *img)
{
	struct inspect_tree_node *n;

	if (t->count == t->capacity) {
		size_t cap = t->capacity ? 2 * t->capacity : 16;
		void *p = realloc(t->nodes, cap * sizeof(*t->nodes));

		if (!p)
			return -ENOMEM;
		t->nodes = p;
		t->capacity = cap;
	}
	n = &t->nodes[t->count++];
	n->vpid = img->hdr.vpid;
	n->vppid = img->hdr.vppid;
	n->session_leader = !!(img->hdr.flags & CKPT_IMG_F_SESSION_LEADER);
	n->computation_id = img->hdr.computation_id;
	snprintf(n->program, sizeof(n->program), "%.*s", CKPT_PROGRAM_MAX,
		 img->hdr.program);
	return 0;
}

static const struct inspect_tree_node *
parent_of(const struct inspect_tree *t, const struct inspect_tree_node *n)
{
	for (size_t i = 0; i < t->count; i++)
		if (t->nodes[i].vpid == n->vppid &&
		    t->nodes[i].computation_id == n->computation_id &&
		    &t->nodes[i] != n)
			return &t->nodes[i];
	return NULL;
}

static void print_node(const struct inspect_tree *t,
		       const struct inspect_tree_node *n, int depth)
{
	printf("%*s%s (vpid %d%s)\n", 2 + 2 * depth, "", n->program, n->vpid,
	       n->session_leader ? ", session leader" : "");
	if (depth == TREE_DEPTH_MAX)	/* a cycle of damaged images */
		return;
	for (size_t i = 0; i < t->count; i++)
		if (parent_of(t, &t->nodes[i]) == n)
			print_node(t, &t->nodes[i], depth + 1);
}

void inspect_tree_print(struct inspect_tree *t)
{
	if (t->count >= 2) {
		printf("\nprocess tree of these %zu images:\n", t->count);
		for (size_t i = 0; i < t->count; i++) {
			const struct inspect_tree_node *n = &t->nodes[i];

			if (parent_of(t, n))
				continue;
			printf("  computation %016" PRIx64 ", parent vpid %d "
			       "(not among them):\n", n->computation_id,
			       n->vppid);
			print_node(t, n, 1);
		}
	}
	free(t->nodes);
	memset(t, 0, sizeof(*t));
}
