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
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include "internal.h"

#define EMULATOR_THREADS_MAX 8

static int emulated;
static int fork_child;
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

int emulator_active(void)
{
	return emulated;
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

void emulator_note_fork_child(void)
{
	fork_child = 1;
}

/*
 * qemu-user 7.2 numbers a new vCPU (one per guest thread) one above the
 * highest live one, and a fork's child drops the parent's other vCPUs
 * but keeps their numbers in its plugin table: the child's first new
 * thread gets number 1 and, if a thread of the parent had 1 at the fork,
 * qemu aborts (plugins/core.c: qemu_plugin_vcpu_init_hook: assertion
 * failed). Without ckpt, any child of a threaded program that starts a
 * thread does. The manager thread would have 1: in the first process, a
 * placeholder thread holds 1 while the manager is created (it gets 2),
 * then ends, and a child's manager can have 1. A child cannot do the
 * same (its 2 is the parent's manager's), so a fork in a fork's child
 * still aborts qemu 7.2 (docs/porting.md).
 */
static int placeholder_word;	/* futex: 1 when the placeholder may end */
static pthread_t placeholder;
static int placeholder_running;

static void *hold_vcpu_number(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&placeholder_word, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &placeholder_word, FUTEX_WAIT_PRIVATE, 0,
			NULL, NULL, 0);
	return NULL;
}

void emulator_manager_number_begin(void)
{
	if (!emulated || fork_child)
		return;
	placeholder_word = 0;
	placeholder_running =
		ckpt_real_pthread_create(&placeholder, NULL, hold_vcpu_number,
					 NULL) == 0;
}

void emulator_manager_number_end(void)
{
	if (!placeholder_running)
		return;
	__atomic_store_n(&placeholder_word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &placeholder_word, FUTEX_WAKE_PRIVATE, 1, NULL,
		NULL, 0);
	pthread_join(placeholder, NULL);
	placeholder_running = 0;
}
