/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Threads of a user-mode emulator around the program (qemu-user's RCU
 * thread): /proc/self/task lists them, but they never run the program's
 * code and never take its signals, so a checkpoint must neither stop nor
 * save them. With CKPT_EMULATED=1 (set by tests/cross/ckpt-aarch64),
 * every thread but the caller is taken for the emulator's at three
 * moments when the program can have no other: start-up, a fork's child
 * and a restart's entry. docs/porting.md, "qemu-user".
 */
#include <stdlib.h>
#include "internal.h"

#define EMULATOR_THREADS_MAX 8

static int emulated;
static int emulator_tids[EMULATOR_THREADS_MAX];
static int nemulator;

/* Every task but the calling thread belongs to the emulator. */
static void snapshot_emulator_threads(void)
{
	struct ckpt_dir_iter it;
	int tid, self = ckpt_real_gettid();

	nemulator = 0;
	if (ckpt_dir_open(&it, "/proc/self/task") < 0)
		return;
	while ((tid = ckpt_dir_next_number(&it)) > 0)
		if (tid != self && nemulator < EMULATOR_THREADS_MAX)
			emulator_tids[nemulator++] = tid;
	ckpt_dir_close(&it);
}

void emulator_threads_init(void)
{
	const char *v = getenv("CKPT_EMULATED");

	emulated = v && v[0] == '1';
	if (emulated)
		snapshot_emulator_threads();
}

/* In a fork's child and at a restart's entry: the emulator's threads
 * there are new ones. */
void emulator_threads_refresh(void)
{
	if (emulated)
		snapshot_emulator_threads();
}

int emulator_thread(int tid)
{
	for (int i = 0; i < nemulator; i++)
		if (emulator_tids[i] == tid)
			return 1;
	return 0;
}
