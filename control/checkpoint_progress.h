/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ckpt_command --checkpoint's progress line on a terminal
 * (checkpoint_progress.c). Started before the checkpoint request, stopped
 * when its reply came; does nothing when stderr is not a terminal.
 */
#ifndef CKPT_CHECKPOINT_PROGRESS_H
#define CKPT_CHECKPOINT_PROGRESS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt/control.h"

struct checkpoint_progress {
	struct ckpt_control control;	/* a copy asking for JSON */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int running, stop, drawn;
};

void checkpoint_progress_start(struct checkpoint_progress *p,
			       const struct ckpt_control *c);
void checkpoint_progress_stop(struct checkpoint_progress *p);

/* "WHAT: 412.0 MiB of ~1.0 GiB written, 380.2 MiB/s, ~2 s left" */
void progress_format(char *out, size_t len, const char *what,
		     uint64_t done, uint64_t expected, double seconds);

#endif
