/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The checkpoint sequence of one process, top to bottom. The manager
 * thread runs it on the coordinator's orders:
 *
 *   DO_SUSPEND  1. stop every other thread in the signal handler
 *               2. save each resource (process attributes, session
 *                  and terminal, process group, signal actions, file
 *                  descriptors, exited children not yet reaped, POSIX
 *                  timers) into
 *                  libckpt's tables; list the open files in the round's
 *                  shared table (shared_files.c)
 *   DO_WRITE    3. write the image into a temporary file: tables, then
 *                  memory (which contains the tables and every thread's
 *                  saved context, the manager's included)
 *               4. resume the threads             -> WRITTEN
 *               5. fsync, rename over the previous image, fsync the
 *                  directory                       -> DURABLE
 *
 * A forked checkpoint cuts step 3 after the tables (everything read from
 * the kernel): a frozen copy of the process writes the memory and fsyncs
 * (forked_copy.c) while the threads resume.
 *
 * In a restarted process the manager comes back out of step 3 with
 * CKPT_RESTARTED.
 */
#include <errno.h>
#include <string.h>
#include "image_chain.h"
#include "internal.h"

/* Every kind of process resource, in save and restore order. */
const struct ckpt_resource_ops *const ckpt_resources[] = {
	&process_resource_ops,
	&session_resource_ops,
	&process_group_resource_ops,
	&signal_resource_ops,
	&shared_memory_resource_ops,	/* before files moves the handed fds */
	&saved_files_resource_ops,	/* before files notes its fds */
	&file_resource_ops,
	&peer_creds_resource_ops,	/* after files puts the sockets back */
	&file_lock_resource_ops,	/* on the fds files put back */
	&zombie_resource_ops,
	&posix_timer_resource_ops,	/* restored after the threads */
	&sysv_ipc_resource_ops,		/* named only */
	&image_chain_resource_ops,
};
const size_t ckpt_nresources =
	sizeof(ckpt_resources) / sizeof(ckpt_resources[0]);



int checkpoint_suspend(uint64_t generation, const char *dir, char *err,
		       size_t errlen)
{
	int r;

	r = threads_suspend_all(err, errlen);
	if (r < 0)
		return r;
	shared_begin_round(generation, dir);
	tcp_refill_begin_round(generation, dir);
	unrestored_begin();
	pending_capture_process();
	for (size_t i = 0; i < ckpt_nresources; i++) {
		if (!ckpt_resources[i]->save)
			continue;
		r = ckpt_resources[i]->save();
		if (r < 0) {
			ckpt_fmt(err, errlen, "saving %s: %s",
				 ckpt_resources[i]->name, strerror(-r));
			threads_resume_all();
			return r;
		}
	}
	return 0;
}

static int drain_resources(char *err, size_t errlen)
{
	for (size_t i = 0; i < ckpt_nresources; i++) {
		int r = ckpt_resources[i]->drain ? ckpt_resources[i]->drain()
						  : 0;

		if (r < 0) {
			ckpt_fmt(err, errlen, "saving %s: %s",
				 ckpt_resources[i]->name, strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Returns 0 once the image is written, with the threads still stopped
 * (the caller resumes them once every process has written its image),
 * CKPT_RESTARTED in a restarted process, or -errno (threads resumed). */
int checkpoint_write(uint64_t generation, int compress, int incremental,
		     int forked, pid_t *template_pid, const char *dir,
		     char *path, size_t pathlen, char *tmp, size_t tmplen,
		     char *err, size_t errlen)
{
	struct ckpt_thread *self = threads_manager_slot();
	int r;

	threads_capture_self(self);
	self->is_manager = 1;
	self->uc = NULL;
	if (ckpt_save_context(&self->ctx) != 0)
		return CKPT_RESTARTED;
	/* the next image must link the file its base stays */
	compaction_stop();
	pipes_begin_round(generation, dir && dir[0] ? dir : ckpt.ckpt_dir);
	r = drain_resources(err, errlen);
	if (r == 0 && forked)
		r = image_write_forked(generation, compress, dir, path,
				       pathlen, tmp, tmplen, template_pid, err,
				       errlen);
	else if (r == 0)
		r = image_write(generation, compress, incremental, dir, path,
				pathlen, tmp,
				tmplen, err, errlen);
	pipes_end_round();
	if (r < 0)
		threads_resume_all();
	return r;
}

/* In the restarted process, on the leader, before any thread runs. */
int checkpoint_restore_resources(const struct ckpt_restart_args *args)
{
	int r;

	tcp_refill_forget();	/* its bytes are in the peer's image */
	for (size_t i = 0; i < ckpt_nresources; i++) {
		if (!ckpt_resources[i]->restore)
			continue;
		r = ckpt_resources[i]->restore(args);
		if (r < 0)
			return r;
	}
	return 0;
}
