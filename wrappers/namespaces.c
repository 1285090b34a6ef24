// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * unshare and setns of a user namespace. The kernel allows them only in a
 * single-threaded process (EINVAL otherwise), and libckpt's manager
 * thread makes every process of the computation a threaded one: `unshare
 * -r`, bubblewrap or `nsenter -U` failed under ckpt where they work
 * without it. For such a call in a program with no thread of its own, the
 * manager thread leaves (manager_leave: its connection is shut down, a
 * round it is in fails), the call is made, and the manager starts again
 * and joins the coordinator as a process that lost it. A program with
 * threads of its own gets the kernel's EINVAL as without ckpt, and so
 * does one that makes a pid namespace in the same call (`unshare -r -p`):
 * after it no thread can be made, so the manager could not come back. The
 * namespace itself is not restored by a restart: the checkpoint says so
 * (process.c, note_namespaces).
 */
#include <sys/ioctl.h>
#include <linux/nsfs.h>
#include "wrappers.h"

/* unshare flags the kernel refuses in a threaded process */
#define SINGLE_THREAD_ONLY (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | \
			    CLONE_VM)

DEFINE_NEXT(unshare);
DEFINE_NEXT(setns);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_namespaces(void)
{
	RESOLVE_NEXT(unshare);
	RESOLVE_NEXT(setns);
}

/* call with the manager thread out of the way when it can be; errno as
 * the call left it. */
#define SINGLE_THREADED(call)                                              \
	({                                                                 \
		sigset_t old_ = ckpt_block_checkpoints();                  \
		int left_, r_, e_;                                         \
		manager_wait_image_settled();                              \
		left_ = manager_leave();                                   \
		r_ = (call);                                               \
		e_ = errno;                                                \
		if (left_ != -EBUSY)                                       \
			manager_come_back();                               \
		ckpt_restore_mask(&old_);                                  \
		errno = e_;                                                \
		r_;                                                        \
	})

CKPT_WRAPPER int unshare(int flags)
{
	/* after a new pid namespace for its children the process cannot
	 * make a thread (EINVAL from clone): the manager could not come
	 * back, and the images would miss the process without a word */
	if (!(flags & SINGLE_THREAD_ONLY) || (flags & CLONE_NEWPID))
		return NEXT_FN(unshare)(flags);
	return SINGLE_THREADED(NEXT_FN(unshare)(flags));
}

/* fd names a user namespace (or a process, whose user namespace nstype
 * asks for) */
static int enters_user_namespace(int fd, int nstype)
{
	if (nstype)
		return (nstype & CLONE_NEWUSER) != 0;
	return ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWUSER;
}

CKPT_WRAPPER int setns(int fd, int nstype)
{
	if (!enters_user_namespace(fd, nstype))
		return NEXT_FN(setns)(fd, nstype);
	return SINGLE_THREADED(NEXT_FN(setns)(fd, nstype));
}
