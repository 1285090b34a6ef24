/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Client side of the coordinator protocol (include/ckpt/protocol.h), shared
 * by libckpt.so and the command-line tools. Implemented in
 * protocol/client*.c. Every function returns >= 0 on success or -errno;
 * none of them calls malloc or takes a lock, so libckpt may call them while
 * the application's threads are suspended.
 */
#ifndef CKPT_COORD_CLIENT_H
#define CKPT_COORD_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include "ckpt/protocol.h"

/* The address to use: explicit if non-NULL and non-empty, else $CKPT_COORD,
 * else the per-user default Unix socket path
 * ($XDG_RUNTIME_DIR or /tmp)/ckpt-<uid>/coordinator.sock, creating the
 * 0700 directory if needed. */
int ckpt_coord_resolve_addr(const char *explicit_addr, char *out, size_t len);

/* Connect to a coordinator address ("/path" or "HOST:PORT"). Sets
 * TCP_NODELAY on TCP, CLOEXEC always. On TCP, runs the handshake of
 * docs/protocol.md, "Authentication", before returning (-EKEYREJECTED: the
 * peer could not prove it knows $HOME/.ckpt/secret); ckpt_msg_send/recv
 * then add and check each message's MAC. Returns the fd. */
int ckpt_coord_connect(const char *addr, int timeout_ms);

/* Start `coordinator_path --coord addr` detached (its own session, stdio on
 * /dev/null) and wait up to timeout_ms until it accepts connections. */
int ckpt_coord_spawn(const char *coordinator_path, const char *addr,
		     const char *const extra_args[], int timeout_ms);

/* Connect, spawning the coordinator found next to the running executable
 * when none answers. */
int ckpt_coord_connect_or_spawn(const char *addr, int timeout_ms);

/* One message = one sendmsg(header + payload). */
int ckpt_msg_send(int fd, uint16_t type, const void *payload, uint32_t len);

/* Receive one message into payload (at most cap bytes; a longer payload is
 * an error -EMSGSIZE). Returns the message type (> 0), -ETIMEDOUT when
 * timeout_ms (< 0: forever) passes, -ECONNRESET on EOF, -EBADMSG when the
 * MAC of an authenticated connection is wrong (close it). */
int ckpt_msg_recv(int fd, void *payload, uint32_t cap, uint32_t *len,
		  int timeout_ms);

/* The per-user secret for TCP connections ($HOME/.ckpt/secret, 0600,
 * created on first use). out gets CKPT_SECRET_LEN hex chars + NUL. */
int ckpt_secret_load(char *out, size_t len);

/* Resolve a path relative to the directory of the running executable
 * (/proc/self/exe), e.g. "../lib/ckpt/libckpt.so". */
int ckpt_install_path(const char *rel, char *out, size_t len);

#endif /* CKPT_COORD_CLIENT_H */
