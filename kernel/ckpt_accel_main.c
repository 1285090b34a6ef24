// SPDX-License-Identifier: GPL-2.0
/*
 * ckpt_accel: /dev/ckpt_accel, a misc device whose ioctls do for the ckpt
 * checkpointer what userspace does slowly or not at all (docs/kernel.md):
 * list the populated pages of a sparse range without reading pagemap,
 * and track dirty pages without soft-dirty and without write faults.
 * The device keeps no state per open file; .owner pins the module while
 * any file is open, so rmmod is refused while the device is in use.
 */
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/uaccess.h>
#include "ckpt_accel.h"

atomic_t ckpt_accel_live_objects = ATOMIC_INIT(0);

static long ioctl_version(void __user *uarg)
{
	struct ckpt_accel_version v = {
		.version = CKPT_ACCEL_VERSION,
		.ops = CKPT_ACCEL_OP_POPULATED | CKPT_ACCEL_OP_DIRTY,
		.range_size = sizeof(struct ckpt_accel_range),
	};

	return copy_to_user(uarg, &v, sizeof(v)) ? -EFAULT : 0;
}

/* A bigger struct from a newer userspace is fine if its tail is zero. */
static int copy_range_request(struct ckpt_accel_range *req, void __user *uarg)
{
	u32 usize;
	int err;

	if (get_user(usize, (u32 __user *)uarg))
		return -EFAULT;
	if (usize < sizeof(*req))
		return -EINVAL;
	if (usize > PAGE_SIZE)
		return -E2BIG;
	err = copy_struct_from_user(req, sizeof(*req), uarg, usize);
	if (err)
		return err;
	req->size = sizeof(*req);
	return 0;
}

static int check_range_request(unsigned int cmd,
			       const struct ckpt_accel_range *req)
{
	u32 allowed = 0;
	bool report = true;

	if (cmd == CKPT_ACCEL_IOC_DIRTY) {
		allowed = CKPT_ACCEL_DIRTY_CLEAR | CKPT_ACCEL_DIRTY_NO_REPORT;
		report = !(req->flags & CKPT_ACCEL_DIRTY_NO_REPORT);
		if (!report && !(req->flags & CKPT_ACCEL_DIRTY_CLEAR))
			return -EINVAL;
	}
	if (req->flags & ~allowed)
		return -EINVAL;
	if (req->pid < 0)
		return -EINVAL;
	if (!PAGE_ALIGNED(req->start) || !PAGE_ALIGNED(req->end) ||
	    req->start >= req->end || req->end > TASK_SIZE_MAX)
		return -EINVAL;
	if (!report)
		return 0;
	if (!req->max_runs || req->max_runs > CKPT_ACCEL_MAX_RUNS)
		return -EINVAL;
	if (!access_ok(u64_to_user_ptr(req->runs),
		       (size_t)req->max_runs * sizeof(struct ckpt_accel_run)))
		return -EFAULT;
	return 0;
}

static long ioctl_range(unsigned int cmd, void __user *uarg)
{
	enum ckpt_accel_walk_mode mode = cmd == CKPT_ACCEL_IOC_DIRTY ?
		CKPT_ACCEL_WALK_DIRTY : CKPT_ACCEL_WALK_POPULATED;
	struct ckpt_accel_range req;
	struct mm_struct *mm;
	int err;

	err = copy_range_request(&req, uarg);
	if (err)
		return err;
	err = check_range_request(cmd, &req);
	if (err)
		return err;
	mm = ckpt_accel_get_target_mm(req.pid);
	if (IS_ERR(mm))
		return PTR_ERR(mm);
	if (req.end > mm->task_size)
		err = -EINVAL;
	else
		err = ckpt_accel_walk_runs(mm, mode, &req);
	mmput(mm);
	if (err)
		return err;
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return req.nr_runs;
}

static long ckpt_accel_ioctl(struct file *file, unsigned int cmd,
			     unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case CKPT_ACCEL_IOC_VERSION:
		return ioctl_version(uarg);
	case CKPT_ACCEL_IOC_POPULATED:
	case CKPT_ACCEL_IOC_DIRTY:
		return ioctl_range(cmd, uarg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations ckpt_accel_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = ckpt_accel_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice ckpt_accel_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "ckpt_accel",
	.fops = &ckpt_accel_fops,
	.mode = 0666,	/* every ioctl checks whom it touches */
};

static int __init ckpt_accel_init(void)
{
	int err = misc_register(&ckpt_accel_dev);

	if (err) {
		pr_err("ckpt_accel: cannot register /dev/ckpt_accel: error %d\n",
		       err);
		return err;
	}
	pr_info("ckpt_accel: /dev/ckpt_accel ready, interface version %d\n",
		CKPT_ACCEL_VERSION);
	return 0;
}

static void __exit ckpt_accel_exit(void)
{
	int live = atomic_read(&ckpt_accel_live_objects);

	misc_deregister(&ckpt_accel_dev);
	if (live)
		pr_err("ckpt_accel: leak: %d request objects still live at unload\n",
		       live);
	pr_info("ckpt_accel: unloaded\n");
}

module_init(ckpt_accel_init);
module_exit(ckpt_accel_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ckpt checkpointer accelerator: populated and dirty page runs");
MODULE_AUTHOR("ckpt project");
