/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ckpt_inspect: the signal state an image records (version 7, struct
 * ckpt_signal_state): dispositions, pending signals, each thread's mask,
 * in words for the text and as data for --json.
 */
#ifndef CKPT_RESTART_INSPECT_SIGNALS_H
#define CKPT_RESTART_INSPECT_SIGNALS_H

#include <stddef.h>
#include <stdint.h>
#include "ckpt/json_out.h"
#include "image_check.h"

/* "SIGUSR1", "SIGRTMIN+3", "SIGRTMAX", "SIG32"; buf of 16 bytes. */
const char *signal_name(int sig, char *buf, size_t len);
/* The text's "signals" section: non-default dispositions, ckpt's own
 * signal, the process's pending signals; or "not recorded". */
void print_signal_state(struct ckpt_image *img);
/* Thread record i's mask and pending signals, one indented line (none
 * when not recorded). */
void print_thread_signals(const struct ckpt_image *img, uint32_t i);
/* --json: "signals" of the process (null when not recorded) and of
 * thread record i. */
void json_signal_state(struct json_out *j, struct ckpt_image *img);
void json_thread_signals(struct json_out *j, const struct ckpt_image *img,
			 uint32_t i);

#endif /* CKPT_RESTART_INSPECT_SIGNALS_H */
