// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libckpt's side of /dev/ckpt_accel (kernel/, docs/kernel.md): probe the
 * module and its interface version, and wrap its range ioctls. Raw
 * syscalls only: no malloc, no stdio, and no call through libckpt's own
 * open()/ioctl() wrappers, because the memory writer calls these while
 * the application's threads are suspended. Each data call opens the
 * device and closes it again, so no libckpt descriptor sits in the
 * application's fd table (where a checkpoint would have to skip it and a
 * daemon's close-all loop could take it away).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ckpt/accel.h"

static unsigned int accel_ops;	/* CKPT_ACCEL_OP_* of the probed module */

static long accel_syscall_result(long ret)
{
	return ret < 0 ? -errno : ret;
}

static int open_device(void)
{
	return accel_syscall_result(syscall(SYS_openat, AT_FDCWD,
					    CKPT_ACCEL_DEVICE,
					    O_RDWR | O_CLOEXEC));
}

static void close_device(int fd)
{
	syscall(SYS_close, fd);
}

static long device_ioctl(unsigned long cmd, void *arg)
{
	long ret;
	int fd = open_device();

	if (fd < 0)
		return fd;
	ret = accel_syscall_result(syscall(SYS_ioctl, fd, cmd, arg));
	close_device(fd);
	return ret;
}

int ckpt_accel_open(void)
{
	struct ckpt_accel_version v;
	long ret;

	accel_ops = 0;
	memset(&v, 0, sizeof(v));
	ret = device_ioctl(CKPT_ACCEL_IOC_VERSION, &v);
	if (ret < 0)
		return ret;
	/* Older than what this libckpt speaks, or a struct we cannot fill. */
	if (v.version < CKPT_ACCEL_VERSION ||
	    v.range_size < sizeof(struct ckpt_accel_range))
		return -EPROTO;
	accel_ops = v.ops;
	return accel_ops & CKPT_ACCEL_OP_POPULATED ? 0 : -EPROTO;
}

int ckpt_accel_available(void)
{
	return accel_ops != 0;
}

unsigned int ckpt_accel_ops(void)
{
	return accel_ops;
}

static long range_ioctl(unsigned long cmd, uintptr_t start, uintptr_t end,
			struct ckpt_accel_run *runs, size_t max,
			unsigned int flags, uintptr_t *next)
{
	struct ckpt_accel_range req;
	long ret;

	if (max > CKPT_ACCEL_MAX_RUNS)
		max = CKPT_ACCEL_MAX_RUNS;
	memset(&req, 0, sizeof(req));
	req.size = sizeof(req);
	req.start = start;
	req.end = end;
	req.runs = (uintptr_t)runs;
	req.max_runs = max;
	req.flags = flags;
	ret = device_ioctl(cmd, &req);
	if (ret >= 0 && next)
		*next = req.next;
	return ret;
}

long ckpt_accel_populated_runs(uintptr_t start, uintptr_t end,
					 struct ckpt_accel_run *runs,
					 size_t max)
{
	if (!(accel_ops & CKPT_ACCEL_OP_POPULATED))
		return -ENODEV;
	return range_ioctl(CKPT_ACCEL_IOC_POPULATED, start, end, runs, max, 0,
			   NULL);
}

long ckpt_accel_dirty_runs(uintptr_t start, uintptr_t end,
				     struct ckpt_accel_run *runs, size_t max,
				     int clear, uintptr_t *next)
{
	if (!(accel_ops & CKPT_ACCEL_OP_DIRTY))
		return -ENODEV;
	return range_ioctl(CKPT_ACCEL_IOC_DIRTY, start, end, runs, max,
			   clear ? CKPT_ACCEL_DIRTY_CLEAR : 0, next);
}

int ckpt_accel_clear_dirty(uintptr_t start, uintptr_t end)
{
	if (!(accel_ops & CKPT_ACCEL_OP_DIRTY))
		return -ENODEV;
	return range_ioctl(CKPT_ACCEL_IOC_DIRTY, start, end, NULL, 0,
			   CKPT_ACCEL_DIRTY_CLEAR | CKPT_ACCEL_DIRTY_NO_REPORT,
			   NULL);
}
