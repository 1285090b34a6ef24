/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Threads of a user-mode emulator around the program (qemu-user's RCU
 * thread): /proc/self/task lists them, but they never run the program's
 * code and never take its signals, so a checkpoint must neither stop nor
 * save them. With CKPT_EMULATED=1 (set by tests/cross/ckpt-aarch64),
 * every thread but the caller is taken for the emulator's at three
 * moments when the program can have no other: start-up, a fork's child
 * and a restart's entry. docs/porting.md, "qemu-user". The same file
 * knows where the emulator put the guest's memory in its own
 * (CKPT_EMULATOR_GUEST_BASE), which /proc/self/pagemap needs.
 */
#include <stdint.h>
#include <stdlib.h>
#include "internal.h"

#define EMULATOR_THREADS_MAX 8

static int emulated;
static uint64_t guest_base;
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
	v = getenv("CKPT_EMULATOR_GUEST_BASE");
	if (emulated && v)
		guest_base = strtoull(v, NULL, 0);
}

/* qemu-user runs the guest at host address guest address + guest_base
 * (qemu's -B) and passes /proc/self/pagemap through untranslated: a
 * guest reading it must add the base to its addresses. 0 when not
 * emulated or when the emulator maps the guest 1:1. */
uint64_t emulator_guest_base(void)
{
	return guest_base;
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
