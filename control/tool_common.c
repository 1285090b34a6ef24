// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Helpers for the command-line tools: name resolution for TCP addresses
 * and the command/reply exchange with a coordinator.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ckpt/coord_client.h"
#include "../protocol/client_internal.h"
#include "tool_common.h"

const char *tool_strerror(int err)
{
	if (err == -EKEYREJECTED || err == EKEYREJECTED)
		return "it did not prove it knows the secret "
		       "($HOME/.ckpt/secret): not a coordinator of this user";
	return strerror(err < 0 ? -err : err);
}

static int numeric_host(char *addr, size_t len, char *msg, size_t msglen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	char *colon = strrchr(addr, ':');
	char host[256], num[INET6_ADDRSTRLEN], port[16];
	unsigned char tmp[sizeof(struct in6_addr)];
	size_t hlen = (size_t)(colon - addr);
	int family, r;

	if (hlen == 0 || hlen >= sizeof(host) || addr[0] == '[' ||
	    strlen(colon + 1) >= sizeof(port))
		return 0;	/* bracketed IPv6 or odd: leave it */
	memcpy(host, addr, hlen);
	host[hlen] = '\0';
	snprintf(port, sizeof(port), "%s", colon + 1);
	if (inet_pton(AF_INET, host, tmp) == 1 ||
	    inet_pton(AF_INET6, host, tmp) == 1)
		return 0;
	r = getaddrinfo(host, port, &hints, &ai);
	if (r) {
		snprintf(msg, msglen, "cannot resolve coordinator host '%s': "
			 "%s", host, gai_strerror(r));
		return -EINVAL;
	}
	family = ai->ai_family;
	if (family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr,
			  num, sizeof(num));
	else
		inet_ntop(AF_INET6,
			  &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, num,
			  sizeof(num));
	freeaddrinfo(ai);
	r = snprintf(addr, len, family == AF_INET6 ? "[%s]:%s" : "%s:%s",
		     num, port);
	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

int tool_resolve_addr_quiet(const char *explicit_addr, char *out,
			    size_t len, char *msg, size_t msglen)
{
	int r = ckpt_coord_resolve_addr(explicit_addr, out, len);

	if (r < 0) {
		snprintf(msg, msglen, "cannot use coordinator address '%s': "
			 "%s", explicit_addr && *explicit_addr ?
			 explicit_addr : getenv("CKPT_COORD") ?
			 getenv("CKPT_COORD") : "(default)", tool_strerror(r));
		return r;
	}
	if (ckpt_cc_is_tcp_addr(out))
		return numeric_host(out, len, msg, msglen);
	return 0;
}

int tool_resolve_addr(const char *prog, const char *explicit_addr,
		      char *out, size_t len)
{
	char msg[512];
	int r = tool_resolve_addr_quiet(explicit_addr, out, len, msg,
					sizeof(msg));

	if (r < 0)
		fprintf(stderr, "%s: %s\n", prog, msg);
	return r;
}

/* *text: the reply's text; *warnings (if asked for): the text after it,
 * "" when there is none (an older coordinator never sends one). */
static int read_reply(int fd, int timeout_ms, int *status, char **text,
		      char **warnings)
{
	uint32_t cap = CKPT_MSG_MAX_PAYLOAD, len = 0;
	struct ckpt_msg_cmd_reply rep;
	char *buf = malloc(cap + 1);
	int r;

	if (!buf)
		return -ENOMEM;
	r = ckpt_msg_recv(fd, buf, cap, &len, timeout_ms);
	if (r >= 0 && r != CKPT_MSG_CMD_REPLY)
		r = -EPROTO;
	if (r >= 0 && len < sizeof(rep))
		r = -EPROTO;
	if (r < 0) {
		free(buf);
		return r;
	}
	memcpy(&rep, buf, sizeof(rep));
	if (rep.text_len > len - sizeof(rep))
		rep.text_len = len - (uint32_t)sizeof(rep);
	buf[len] = '\0';
	if (warnings) {
		*warnings = strdup(buf + sizeof(rep) + rep.text_len);
		if (!*warnings) {
			free(buf);
			return -ENOMEM;
		}
	}
	memmove(buf, buf + sizeof(rep), rep.text_len);
	buf[rep.text_len] = '\0';
	*status = rep.status;
	*text = buf;
	return 0;
}

int tool_command_warnings(int fd, uint32_t cmd, uint32_t arg,
			  int timeout_ms, int *status, char **text,
			  char **warnings)
{
	struct ckpt_msg_cmd m = { .cmd = cmd, .arg = arg };
	int r;

	r = ckpt_msg_send(fd, CKPT_MSG_CMD, &m, sizeof(m));
	if (r < 0)
		return r;
	return read_reply(fd, timeout_ms, status, text, warnings);
}

int tool_command(int fd, uint32_t cmd, uint32_t arg, int timeout_ms,
		 int *status, char **text)
{
	return tool_command_warnings(fd, cmd, arg, timeout_ms, status, text,
				     NULL);
}
