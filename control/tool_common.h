/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the command-line tools (ckpt_command, ckpt_launch): address
 * resolution with host names, and one command/reply exchange. Tools may
 * allocate; these are not part of libckpt.
 */
#ifndef CKPT_TOOL_COMMON_H
#define CKPT_TOOL_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ckpt_coord_resolve_addr(), then a TCP host name becomes a numeric
 * address (what libckpt can connect to without the resolver). Prints
 * "<prog>: ..." and returns -errno on failure. */
int tool_resolve_addr(const char *prog, const char *explicit_addr,
		      char *out, size_t len);
/* The same, printing nothing: msg says what failed. */
int tool_resolve_addr_quiet(const char *explicit_addr, char *out,
			    size_t len, char *msg, size_t msglen);

/* Send CMD and wait for CMD_REPLY (fd from ckpt_coord_connect, which
 * authenticated a TCP connection). *text is malloc'ed. Returns 0 (then
 * *status is the coordinator's) or -errno. */
int tool_command(int fd, uint32_t cmd, uint32_t arg, int timeout_ms,
		 int *status, char **text);
/* The same, and *warnings (malloc'ed, "" if the reply has none): the
 * reply's text for stderr after a success. */
int tool_command_warnings(int fd, uint32_t cmd, uint32_t arg,
			  int timeout_ms, int *status, char **text,
			  char **warnings);

/* Positive errno -> message, for "-r" results too. */
const char *tool_strerror(int err);

#endif /* CKPT_TOOL_COMMON_H */
