/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The command line of tcp_conversation and udp_conversation:
 *   PROG serve|call IP PORT N DELAY_MS
 * and udp_conversation callto (the caller's socket not connected: each
 * number sent with sendto to IP PORT as given at the start).
 */
#ifndef CONVERSATION_H
#define CONVERSATION_H

#include "app_util.h"

struct conversation {
	int serve;			/* else call */
	int unconnected;		/* callto */
	const char *ip;
	unsigned long port, n, delay;
};

static inline struct conversation conversation_args(const char *prog,
						    int argc, char **argv,
						    int callto)
{
	struct conversation c;

	if (argc != 6 || (strcmp(argv[1], "serve") && strcmp(argv[1], "call") &&
			  (!callto || strcmp(argv[1], "callto"))))
		die(prog, "usage: %s serve|call%s IP PORT N DELAY_MS", prog,
		    callto ? "|callto" : "");
	c.serve = !strcmp(argv[1], "serve");
	c.unconnected = !strcmp(argv[1], "callto");
	c.ip = argv[2];
	c.port = parse_ulong(prog, "PORT", argv[3], 1, 65535);
	c.n = parse_ulong(prog, "N", argv[4], 1, 1UL << 30);
	c.delay = parse_ulong(prog, "DELAY_MS", argv[5], 0, 10000);
	return c;
}

#endif
