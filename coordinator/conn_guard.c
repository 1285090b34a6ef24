// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The coordinator under hostile or broken peers. A connection is
 * unauthenticated until its first message (HELLO or CMD, and on TCP the
 * secret), and until then it costs the coordinator an fd and a slot but
 * proves nothing. So:
 *
 *   - each peer (a uid on the Unix socket, an address on TCP) may hold at
 *     most COORD_MAX_NEW_PER_PEER unauthenticated connections, and all
 *     together at most COORD_MAX_NEW: over that, the oldest are closed,
 *     but none younger than COORD_NEW_GRACE_MS. A real process or command
 *     sends its first message right after its connect, well within that
 *     grace, so a flood of idle connections (which may share its uid or
 *     address) delays nobody's checkpoint;
 *   - an unauthenticated connection has COORD_HELLO_TIMEOUT_MS to send
 *     its first message, a command connection that waits for nothing is
 *     closed after COORD_CMD_IDLE_TIMEOUT_MS without a command;
 *   - out of fds (EMFILE, ENFILE), accept() is retried after evicting the
 *     oldest unauthenticated connection (past its grace), else the
 *     listener is not polled
 *     for a pause that doubles up to COORD_ACCEPT_BACKOFF_MAX_MS: the
 *     coordinator never spins on a listener it cannot accept from.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "coordinator.h"

static bool unauthenticated(const struct conn *c)
{
	return c->kind == CONN_NEW && !c->eof;
}

/* Close it now: its fd is what an accept may be waiting for. */
static void evict(struct conn *c, const char *why)
{
	coord_log("%s: closing an unauthenticated connection: %s",
		  c->peer_key, why);
	c->eof = true;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* The oldest unauthenticated connection (of key, or of anyone: NULL). */
static struct conn *oldest_new(struct coordinator *co, const char *key,
			       size_t *count)
{
	struct conn *oldest = NULL;

	*count = 0;
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (!unauthenticated(c) || (key && strcmp(c->peer_key, key)))
			continue;
		(*count)++;
		if (!oldest || c->serial < oldest->serial)
			oldest = c;
	}
	return oldest;
}

void guard_on_accept(struct coordinator *co, struct conn *c)
{
	(void)co;
	c->evictable_ms = now_ms() + COORD_NEW_GRACE_MS;
}

/* Over a cap, the oldest go once their grace is over: a connection just
 * accepted (its first message may be on its way) is never the one. */
static void enforce_caps(struct coordinator *co, int64_t now)
{
	static int64_t next_check_ms;	/* a flood calls often: bound the
					   work to a look every 50 ms */

	if (now < next_check_ms)
		return;
	next_check_ms = now + 50;
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i], *old;
		size_t n;

		if (!unauthenticated(c))
			continue;
		old = oldest_new(co, c->peer_key, &n);
		if (n > COORD_MAX_NEW_PER_PEER && now >= old->evictable_ms)
			evict(old, "too many from this peer without a first "
			      "message");
	}
	for (;;) {
		struct conn *old;
		size_t n;

		old = oldest_new(co, NULL, &n);
		if (n <= COORD_MAX_NEW || now < old->evictable_ms)
			break;
		evict(old, "too many connections without a first message");
	}
}

bool guard_on_accept_error(struct coordinator *co, int err)
{
	struct conn *old;
	size_t n;

	if (err != EMFILE && err != ENFILE && err != ENOBUFS &&
	    err != ENOMEM)
		return false;
	old = oldest_new(co, NULL, &n);
	if (old && now_ms() >= old->evictable_ms) {
		evict(old, "out of file descriptors for new connections");
		return true;
	}
	if (!co->accept_backoff_ms)
		co->accept_backoff_ms = COORD_ACCEPT_BACKOFF_MS;
	coord_log("accept on %s failed: %s; not accepting for %d ms",
		  co->addr, strerror(err), co->accept_backoff_ms);
	co->accept_paused_until = now_ms() + co->accept_backoff_ms;
	co->accept_backoff_ms *= 2;
	if (co->accept_backoff_ms > COORD_ACCEPT_BACKOFF_MAX_MS)
		co->accept_backoff_ms = COORD_ACCEPT_BACKOFF_MAX_MS;
	return false;
}

void guard_on_accept_ok(struct coordinator *co)
{
	co->accept_backoff_ms = 0;
}

bool guard_listener_paused(struct coordinator *co)
{
	if (co->accept_paused_until && now_ms() >= co->accept_paused_until)
		co->accept_paused_until = 0;
	return co->accept_paused_until != 0;
}

static bool idle_command(const struct conn *c)
{
	return c->kind == CONN_COMMAND && !c->eof &&
	       c->pending == PENDING_NONE && !c->out.len &&
	       !c->close_after_flush;
}

void guard_check_timeouts(struct coordinator *co)
{
	int64_t now = now_ms();

	enforce_caps(co, now);
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (unauthenticated(c) && now >= c->first_msg_deadline) {
			coord_log("%s: sent nothing within %d s; closing",
				  c->peer_key, COORD_HELLO_TIMEOUT_MS / 1000);
			c->eof = true;
		} else if (idle_command(c) && now >= c->last_msg_ms +
			   COORD_CMD_IDLE_TIMEOUT_MS) {
			coord_log("%s: command connection idle for %d s; "
				  "closing", c->peer,
				  COORD_CMD_IDLE_TIMEOUT_MS / 1000);
			c->eof = true;
		}
	}
	coord_log_tick();
}

int64_t guard_next_deadline(struct coordinator *co)
{
	int64_t d = co->accept_paused_until;

	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (unauthenticated(c))
			d = deadline_earlier(d, c->first_msg_deadline);
		else if (idle_command(c))
			d = deadline_earlier(d, c->last_msg_ms +
					COORD_CMD_IDLE_TIMEOUT_MS);
	}
	return d;
}
