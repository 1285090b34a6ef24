// SPDX-License-Identifier: GPL-2.0
/*
 * Which process a request may touch. ptrace_may_access() and mm_access()
 * are not exported, so this is a conservative copy of their rule: the
 * caller's own process, or one whose real, effective and saved uid and
 * gid all equal the caller's real ones and which is dumpable; anything
 * else needs CAP_SYS_PTRACE in the initial namespace. Yama and other LSM
 * ptrace policies are not consulted, so the rule is stricter than ptrace
 * only through the capability check; docs/kernel.md says so.
 */
#include <linux/cred.h>
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/pid.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/sched/coredump.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include "ckpt_accel.h"

static bool same_user_as_caller(struct task_struct *task)
{
	const struct cred *cred = current_cred();
	const struct cred *tcred;
	bool same;

	rcu_read_lock();
	tcred = __task_cred(task);
	same = uid_eq(cred->uid, tcred->uid) &&
	       uid_eq(cred->uid, tcred->euid) &&
	       uid_eq(cred->uid, tcred->suid) &&
	       gid_eq(cred->gid, tcred->gid) &&
	       gid_eq(cred->gid, tcred->egid) &&
	       gid_eq(cred->gid, tcred->sgid);
	rcu_read_unlock();
	return same;
}

static bool caller_may_touch(struct task_struct *task, struct mm_struct *mm)
{
	if (mm == current->mm)
		return true;
	if (same_user_as_caller(task) && get_dumpable(mm) == SUID_DUMP_USER)
		return true;
	return capable(CAP_SYS_PTRACE);
}

/*
 * Like mm_access(): hold exec_update_lock so the task cannot exec a
 * setuid program between the check and taking its mm.
 */
static struct mm_struct *get_task_mm_checked(struct task_struct *task)
{
	struct mm_struct *mm;

	if (down_read_killable(&task->signal->exec_update_lock))
		return ERR_PTR(-EINTR);
	mm = get_task_mm(task);
	if (!mm) {
		mm = ERR_PTR(-ESRCH);
	} else if (!caller_may_touch(task, mm)) {
		mmput(mm);
		mm = ERR_PTR(-EPERM);
	}
	up_read(&task->signal->exec_update_lock);
	return mm;
}

struct mm_struct *ckpt_accel_get_target_mm(pid_t pid)
{
	struct task_struct *task;
	struct mm_struct *mm;
	struct pid *p;

	if (pid < 0)
		return ERR_PTR(-EINVAL);
	if (pid == 0) {
		mm = get_task_mm(current);
		return mm ? mm : ERR_PTR(-ESRCH);
	}
	p = find_get_pid(pid);
	if (!p)
		return ERR_PTR(-ESRCH);
	task = get_pid_task(p, PIDTYPE_PID);
	put_pid(p);
	if (!task)
		return ERR_PTR(-ESRCH);
	mm = get_task_mm_checked(task);
	put_task_struct(task);
	return mm;
}
