// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_checkpoint() (include/ckpt.h): a program thread asks the
 * coordinator for a checkpoint of the whole computation, as
 * `ckpt_command --checkpoint` does, on a connection of its own, and waits
 * for the answer. The round stops this thread like any other (it waits in
 * poll with the checkpoint signal open); in a process restarted from that
 * round it comes back in the same wait, sees the restart and returns
 * CKPT_RESTARTED.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ckpt.h"
#include "ckpt/coord_client.h"
#include "../protocol/client_internal.h"
#include "internal.h"

#define CONNECT_TIMEOUT_MS	5000
#define REPLY_TIMEOUT_MS	600000	/* the coordinator gives up sooner */
#define REPLY_REST_MS		10000
#define HOOKS_WAIT_MS		30000	/* resume or restart hooks, rejoin */
#define RESTART_LOOK_MS		200	/* how often the wait looks for a
					   restart */

static int checkpoint_signal_blocked(void)
{
	uint64_t mask = 0;

	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, 8);
	return ckpt.signal > 0 && (mask & (1ULL << (ckpt.signal - 1)));
}

/* Connect and send the command with the checkpoint signal blocked here,
 * so no round saves the connection as one of the program's (it is
 * libckpt's own once moved high). Returns the fd or -errno. */
static int send_request(uint32_t cmd)
{
	struct ckpt_msg_cmd m = { .cmd = cmd };
	sigset_t old;
	int fd, r;

	threads_mask_ckpt_signal(SIG_BLOCK, &old);
	fd = ckpt_coord_connect(ckpt.coord_addr, CONNECT_TIMEOUT_MS);
	if (fd >= 0) {
		fd = ckpt_move_fd_high(fd);
		r = ckpt_msg_send(fd, CKPT_MSG_CMD, &m, sizeof(m));
		if (r < 0) {
			ckpt_mark_own_fd(fd, 0);
			close(fd);
			fd = r;
		}
	}
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, _NSIG / 8);
	return fd;
}

static void close_request(int fd)
{
	ckpt_mark_own_fd(fd, 0);
	close(fd);
}

/* The coordinator's reply: 0, or -errno with the reason logged; *id
 * (if asked) the number its text starts with (a snapshot's id). */
static int read_reply(int fd, uint64_t *id)
{
	struct ckpt_msg_cmd_reply rep;
	uint32_t len = 0;
	char *buf = malloc(CKPT_MSG_MAX_PAYLOAD + 1);
	int r;

	if (!buf)
		return -ENOMEM;
	r = ckpt_msg_recv(fd, buf, CKPT_MSG_MAX_PAYLOAD, &len, REPLY_REST_MS);
	if (r >= 0 && (r != CKPT_MSG_CMD_REPLY || len < sizeof(rep)))
		r = -EPROTO;
	if (r >= 0) {
		memcpy(&rep, buf, sizeof(rep));
		buf[len] = 0;
		r = rep.status > 0 ? -rep.status : 0;
		if (r < 0)
			ckpt_log("%s failed: %.400s", id ? "ckpt_snapshot: the "
				 "snapshot" : "ckpt_checkpoint: the checkpoint",
				 buf + sizeof(rep));
		if (r == 0 && id)
			*id = strtoull(buf + sizeof(rep), NULL, 10);
	}
	free(buf);
	return r;
}

/* Until the reply is there (0), the process turns out to be a restarted
 * one (CKPT_RESTARTED), or -errno. */
static int wait_reply(int fd, unsigned epoch)
{
	int64_t deadline = ckpt_cc_now_ms() + REPLY_TIMEOUT_MS;

	for (;;) {
		int64_t slice = ckpt_cc_now_ms() + RESTART_LOOK_MS;
		int r = ckpt_cc_wait_fd(fd, POLLIN, slice < deadline ?
					slice : deadline);

		if (embedding_restored_epoch() != epoch)
			return CKPT_RESTARTED;
		if (r == 0)
			return 0;
		if (r != -ETIMEDOUT || ckpt_cc_now_ms() >= deadline)
			return r;
	}
}

/* A checkpoint or, with id, a snapshot, asked for by this thread. */
static int request_round(uint32_t cmd, uint64_t *id)
{
	unsigned epoch = embedding_restored_epoch();
	int fd, r;

	if (!api_enabled())
		return -ENOTSUP;
	/* this thread must be able to stop, and nothing of it may hold
	 * the round back */
	if (hooks_running_here() || sections_open_here() ||
	    checkpoint_signal_blocked())
		return -EDEADLK;
	fd = send_request(cmd);
	if (fd < 0)
		return fd;
	r = wait_reply(fd, epoch);
	if (r == CKPT_RESTARTED) {
		/* the connection died with the old process: not ours */
		gate_wait_open(HOOKS_WAIT_MS);
		return CKPT_RESTARTED;
	}
	if (r == 0)
		r = read_reply(fd, id);
	close_request(fd);
	if (r == 0)
		gate_wait_open(HOOKS_WAIT_MS);
	return r < 0 ? r : CKPT_CONTINUING;
}

int api_checkpoint(void)
{
	return request_round(CKPT_CMD_CHECKPOINT, NULL);
}

int api_snapshot(uint64_t *id)
{
	uint64_t got = 0;
	int r;

	if (!id)
		return -EINVAL;
	r = request_round(CKPT_CMD_SNAPSHOT, &got);
	if (r == CKPT_CONTINUING)
		*id = got;
	return r;
}
