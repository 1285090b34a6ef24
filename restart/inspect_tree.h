/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ckpt_inspect with several images: the processes they hold as a tree,
 * by virtual pid and parent pid (inspect_tree.c).
 */
#ifndef CKPT_RESTART_INSPECT_TREE_H
#define CKPT_RESTART_INSPECT_TREE_H

#include <stddef.h>
#include <stdint.h>
#include "image_check.h"

struct inspect_tree_node {
	int32_t vpid, vppid;
	int session_leader;
	uint64_t computation_id;
	char program[CKPT_PROGRAM_MAX + 1];
};

struct inspect_tree {
	struct inspect_tree_node *nodes;
	size_t count, capacity;
};

/* Remember the process of an open image; -ENOMEM if it cannot. */
int inspect_tree_add(struct inspect_tree *t, const struct ckpt_image *img);

/* Print the tree when it holds two processes or more; free it. */
void inspect_tree_print(struct inspect_tree *t);

#endif
