// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: the coordinator's message parser and everything a
 * peer's bytes reach (coordinator/coordinator.c conn_read(): framing,
 * HELLO, CMD, the round's results, UNRESTORED, commands).
 *
 * Input: records of [conn index (1 byte, mod FUZZ_CONNS)] [length (2
 * bytes, little-endian)] [bytes]; each record's bytes arrive on that
 * connection and are handled as the coordinator handles a read. The first
 * byte of the input picks the transport (bit 0: TCP, where a peer must
 * pass the handshake of coordinator/auth_handshake.c first; random bytes
 * do not, so TCP inputs fuzz the handshake). tests/fuzz/coord_msg_seeds.c writes real messages in this
 * form as the seed corpus.
 *
 * What would touch the machine is not linked: the images of processes
 * that left (orphan_images.c) and restart scripts (restart_script.c) are
 * stubs, the log goes nowhere (after being formatted and sanitized), and
 * no pid is ever vouched for (peer_pid is 0), so nothing is signalled.
 */
#define main ckpt_coordinator_main
#include "../../coordinator/coordinator.c"
#undef main

#include <sys/socket.h>

#include "../../protocol/sanitize.h"

#define FUZZ_CONNS 4

void coord_log(const char *fmt, ...)
{
	char raw[1024], safe[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	ckpt_sanitize_copy(safe, sizeof(safe), raw, strlen(raw), false);
}

void coord_log_tick(void)
{
}

int orphan_adopt(struct coordinator *co, struct conn *c, char *why,
		 size_t wlen)
{
	(void)co;
	(void)c;
	snprintf(why, wlen, "not in the fuzzer");
	return -EREMOTE;
}

void orphans_commit(struct coordinator *co)
{
	(void)co;
}

void orphans_discard(struct coordinator *co)
{
	(void)co;
}

void write_restart_scripts(struct coordinator *co, const char *paths,
			   const char *hosts, uint64_t generation,
			   struct buf *warnings)
{
	(void)co;
	(void)paths;
	(void)hosts;
	(void)generation;
	(void)warnings;
}

/* A connection whose other end (*peer_fd) is never read. */
static uint64_t fuzz_conn(struct coordinator *co, bool tcp, int *peer_fd)
{
	int sv[2];
	struct conn *c;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv) < 0)
		abort();
	*peer_fd = sv[1];
	c = conn_add(co, sv[0], tcp ? "127.0.0.1:1" : "uid 0 pid 0");
	c->local_peer = !tcp;
	snprintf(c->peer_key, sizeof(c->peer_key), "fuzz");
	return c->serial;
}

/* reap() frees connections: look them up again each time. */
static struct conn *find_conn(struct coordinator *co, uint64_t serial)
{
	for (size_t i = 0; i < co->nconns; i++)
		if (co->conns[i]->serial == serial)
			return co->conns[i];
	return NULL;
}

static void fuzz_cleanup(struct coordinator *co, const int *peer_fds)
{
	for (size_t i = 0; i < co->nconns; i++)
		co->conns[i]->eof = true;
	reap(co);
	free(co->conns);
	buf_free(&co->round.paths);
	buf_free(&co->round.failures);
	buf_free(&co->round.unrestored);
	for (int i = 0; i < FUZZ_CONNS; i++)
		close(peer_fds[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct coordinator co = { .listen_fd = -1, .lock_fd = -1 };
	uint64_t serials[FUZZ_CONNS];
	int peer_fds[FUZZ_CONNS];
	size_t pos = 1;

	if (!size)
		return 0;
	co.is_tcp = data[0] & 1;
	memset(co.secret, 'a', CKPT_SECRET_LEN);
	snprintf(co.addr, sizeof(co.addr), "fuzz");
	co.computation_id = 1;
	for (int i = 0; i < FUZZ_CONNS; i++)
		serials[i] = fuzz_conn(&co, co.is_tcp, &peer_fds[i]);
	while (pos + 3 <= size) {
		struct conn *c = find_conn(&co, serials[data[pos] % FUZZ_CONNS]);
		size_t len = data[pos + 1] | (size_t)data[pos + 2] << 8;

		pos += 3;
		if (len > size - pos)
			len = size - pos;
		if (c && !c->eof) {
			buf_append(&c->in, data + pos, len);
			conn_read(&co, c);
		}
		pos += len;
		reap(&co);
		round_check_timeouts(&co);
		guard_check_timeouts(&co);
		reap(&co);
	}
	fuzz_cleanup(&co, peer_fds);
	return 0;
}
