/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ckpt_inspect --json: one image as one JSON object on one line, the
 * schema in docs/ckpt_inspect.md.
 */
#ifndef CKPT_RESTART_INSPECT_JSON_H
#define CKPT_RESTART_INSPECT_JSON_H

#include "image_check.h"

struct inspect_options {
	int json;
	int verify;		/* read all data, check every hash */
	int backtraces;
};

/* verified: image_verify_data() passed (not asked: opts->verify 0). */
void inspect_print_json(struct ckpt_image *img,
			const struct inspect_options *opts, int verified);

#endif /* CKPT_RESTART_INSPECT_JSON_H */
