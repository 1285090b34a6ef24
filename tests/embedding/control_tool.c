// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A tool linked with libckpt-control (tests/test_embedding.py):
 *   control_tool [--json] list | status | checkpoint
 * prints the reply's text (--json: asked for as JSON) after a
 * "== <command> status=N" line, or
 * "error code=N message=..." when the call failed without a reply.
 */
#include <stdio.h>
#include <string.h>
#include "ckpt/control.h"

int main(int argc, char **argv)
{
	struct ckpt_control c;
	struct ckpt_control_reply rep = { 0 };
	struct ckpt_control_error err;
	int json = argc == 3 && !strcmp(argv[1], "--json");
	int r;

	argv += json;
	argc -= json;
	if (argc != 2)
		return 2;
	if (ckpt_control_open(&c, NULL, &err) < 0) {
		printf("error code=%d message=%s\n", err.code, err.message);
		return 1;
	}
	c.json = json;
	if (!strcmp(argv[1], "list"))
		r = ckpt_control_list(&c, &rep, &err);
	else if (!strcmp(argv[1], "status"))
		r = ckpt_control_status(&c, &rep, &err);
	else
		r = ckpt_control_checkpoint(&c, 0, &rep, &err);
	if (!rep.text) {
		printf("error code=%d message=%s\n", err.code, err.message);
		return 1;
	}
	printf("== %s status=%d r=%d\n%s", argv[1], rep.status, r, rep.text);
	ckpt_control_reply_free(&rep);
	return r < 0;
}
