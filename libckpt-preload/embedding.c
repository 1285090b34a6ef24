// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The in-process API (include/ckpt.h, docs/embedding.md): the table a
 * program finds with dlsym(RTLD_DEFAULT, "ckpt_api"), and the calls that
 * only read libckpt's state. The others live with what they drive:
 * checkpoint_request.c, delay_sections.c, hooks.c.
 */
#include <errno.h>
#include <string.h>
#include "ckpt.h"
#include "internal.h"

static int enabled;
static unsigned restored_epoch;

/* libckpt runs in this process and can checkpoint it. */
void embedding_enable(void)
{
	enabled = 1;
}

int api_enabled(void)
{
	return enabled;
}

/* In the restarted process, before any of its threads runs again. */
void embedding_note_restored(void)
{
	__atomic_add_fetch(&restored_epoch, 1, __ATOMIC_RELEASE);
}

unsigned embedding_restored_epoch(void)
{
	return __atomic_load_n(&restored_epoch, __ATOMIC_ACQUIRE);
}

static int64_t api_generation(void)
{
	return enabled ? (int64_t)__atomic_load_n(&ckpt.generation,
						  __ATOMIC_ACQUIRE)
		       : -ENOTSUP;
}

static int api_restarts(void)
{
	return enabled ? (int)__atomic_load_n(&ckpt.restarts,
					      __ATOMIC_ACQUIRE)
		       : -ENOTSUP;
}

static int copy_out(char *buf, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (!enabled)
		return -ENOTSUP;
	if (!buf || n >= len)
		return -ERANGE;
	memcpy(buf, s, n + 1);
	return 0;
}

static int api_checkpoint_dir(char *buf, size_t len)
{
	return copy_out(buf, len, ckpt.ckpt_dir);
}

static int api_image_path(char *buf, size_t len)
{
	return copy_out(buf, len, ckpt.image_path);
}

__attribute__((visibility("default"))) const struct ckpt_api ckpt_api = {
	.size = sizeof(struct ckpt_api),
	.version = CKPT_API_VERSION,
	.is_enabled = api_enabled,
	.generation = api_generation,
	.restarts = api_restarts,
	.checkpoint_dir = api_checkpoint_dir,
	.image_path = api_image_path,
	.checkpoint = api_checkpoint,
	.delay_begin = api_delay_begin,
	.delay_end = api_delay_end,
	.hook_add = api_hook_add,
	.snapshot = api_snapshot,
};
