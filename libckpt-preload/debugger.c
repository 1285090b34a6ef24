/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a debugger (dist/gdb/ckpt-gdb.py) needs from libckpt: one function
 * it puts a breakpoint on, called at the moments it must know of (the
 * checkpoint signal chosen or moved, every thread signaled for a round,
 * the parked threads about to be released), the way ld.so's
 * _dl_debug_state tells debuggers of loaded libraries. Without a
 * debugger the call costs a few instructions per round. And a restart
 * with --stopped stops the whole process once its threads are back and
 * before any of them runs program code, for the debugger to attach.
 * docs/reversible-debugging.md.
 */
#include <signal.h>
#include <sys/syscall.h>
#include "internal.h"

/* Set by the debugger (in the inferior's memory) while it drives a
 * snapshot: each event then traps. A compiled-in trap, not a breakpoint
 * the debugger writes: a breakpoint's int3 in libckpt's code would be
 * saved in the image written meanwhile (and hardware breakpoints do not
 * fire on every VM). Cleared at restart. */
__attribute__((visibility("default"), used))
volatile int ckpt_debugger_trap_events;
/* The checkpoint signal, for the debugger to pass it on unseen. */
__attribute__((visibility("default"), used))
volatile int ckpt_debugger_signal;

static inline __attribute__((always_inline)) void trap(int event, long arg)
{
#if defined(__x86_64__)
	__asm__ __volatile__("int3" : : "D"(event), "S"(arg) : "memory");
#elif defined(__aarch64__)
	register long x0 __asm__("x0") = event;
	register long x1 __asm__("x1") = arg;
	__asm__ __volatile__("brk #0" : : "r"(x0), "r"(x1) : "memory");
#endif
}

/* Exported and never inlined: a debugger may also break here. The
 * event and its argument are in the first two argument registers. */
__attribute__((visibility("default"), noinline, used))
void ckpt_debugger_event(int event, long arg)
{
	if (!ckpt_debugger_trap_events) {
		__asm__ __volatile__("" : : "r"(event), "r"(arg) : "memory");
		return;
	}
	trap(event, arg);
}

/* The lock-order traps (wrappers/lock_order.c): only where the debugger
 * asked for them (ckpt_lock_order_trap_at, _trap_enter), so always. */
__attribute__((visibility("default"), noinline, used))
void ckpt_debugger_lock_event(int event, long arg)
{
	trap(event, arg);
}

void debugger_note(int event, long arg)
{
	if (event == CKPT_DEBUGGER_SIGNAL)
		ckpt_debugger_signal = (int)arg;
	ckpt_debugger_event(event, arg);
}

/* ckpt_restart --stopped: every thread is back, parked; the debugger
 * attaches to the stopped process and continues it. */
void debugger_stop_if_asked(uint32_t restart_flags)
{
	ckpt_debugger_trap_events = 0;
	if (!(restart_flags & CKPT_RESTART_F_STOPPED))
		return;
	debugger_note(CKPT_DEBUGGER_RESTORED, ckpt_real_getpid());
	syscall(SYS_kill, ckpt_real_getpid(), SIGSTOP);
}
