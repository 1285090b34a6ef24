/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A mask saved by sigsetjmp is the kernel's, taken with a raw system
 * call: after a move of the checkpoint signal (libckpt-preload/
 * ckpt_signal.c) it may block the new one, and siglongjmp would restore
 * that, so the thread could no longer be stopped for a checkpoint. The
 * checkpoint signal of now is taken out of the saved mask first.
 */
#include <setjmp.h>
#include "wrappers.h"

DEFINE_NEXT(longjmp);
DEFINE_NEXT(_longjmp);
DEFINE_NEXT(siglongjmp);
void __longjmp_chk(struct __jmp_buf_tag env[1], int val)
	__attribute__((noreturn));
DEFINE_NEXT(__longjmp_chk);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_longjmp(void)
{
	RESOLVE_NEXT(longjmp);
	RESOLVE_NEXT(_longjmp);
	RESOLVE_NEXT(siglongjmp);
	RESOLVE_NEXT(__longjmp_chk);
}

static void unblock_ckpt_signal_in(struct __jmp_buf_tag *env)
{
	if (env->__mask_was_saved && ckpt.signal)
		sigdelset(&env->__saved_mask, ckpt.signal);
}

CKPT_WRAPPER void longjmp(struct __jmp_buf_tag env[1], int val)
{
	unblock_ckpt_signal_in(env);
	NEXT_FN(longjmp)(env, val);
}

CKPT_WRAPPER void _longjmp(struct __jmp_buf_tag env[1], int val)
{
	unblock_ckpt_signal_in(env);
	NEXT_FN(_longjmp)(env, val);
}

CKPT_WRAPPER void siglongjmp(sigjmp_buf env, int val)
{
	unblock_ckpt_signal_in(env);
	NEXT_FN(siglongjmp)(env, val);
}

CKPT_WRAPPER void __longjmp_chk(struct __jmp_buf_tag env[1], int val)
{
	unblock_ckpt_signal_in(env);
	NEXT_FN(__longjmp_chk)(env, val);
}
