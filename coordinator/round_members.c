// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Who belongs to a checkpoint round. The processes connected when the
 * round starts are its first members, but a computation keeps changing
 * while they stop one by one:
 *
 *   - a member forks: the child connects on its own a moment later, maybe
 *     after its parent has stopped. A process that joins while the round
 *     is still suspending becomes a member at once (DO_SUSPEND).
 *   - a member execs: its connection closes, and the new program connects
 *     again with the same pid.
 *   - a member exits: its connection closes too.
 *
 * So before any image is written, once every member is suspended, the
 * members on this host are looked at: every child of a member (any of its
 * threads) that is alive but not a member, and every member that left
 * while suspending and is still alive, is waited for (at most
 * COORD_JOIN_TIMEOUT_MS) until it joins (and is suspended) or exits and
 * is a zombie its parent's image records. One that does neither fails
 * the round with its pid and parent named: the images would not hold the
 * whole computation. Processes on other hosts cannot be looked at.
 * Processes a restart is still bringing back are waited for too
 * (restart_groups.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ckpt/proc_stat.h"
#include "coordinator.h"

/* Only a process whose pid the kernel vouched for (peer_pid.c): a pid a
 * peer merely claims may be anyone's. */
bool proc_on_this_host(const struct conn *c)
{
	return c->proc.local_pid > 0;
}

int read_proc_text(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENODATA;
	buf[n] = 0;
	return 0;
}

/* The state letter of /proc/PID/stat ('R', 'S', 'T', 'Z', ...), 0 when
 * the process is gone. */
static char state_in_stat(const char *stat)
{
	const char *p = strrchr(stat, ')');

	return p && p[1] == ' ' ? p[2] : 0;
}

char local_process_state(pid_t pid)
{
	char buf[512];

	if (read_proc_text(pid, "stat", buf, sizeof(buf)) < 0)
		return 0;
	return state_in_stat(buf);
}

char round_process_state(struct coordinator *co, struct conn *c)
{
	char buf[512];

	if (proc_file_read(co, c, PROC_FILE_STAT, buf, sizeof(buf)) < 0)
		return 0;
	return state_in_stat(buf);
}

/* The threads /proc/PID/task still lists (an exited leader stays until
 * the process is reaped). */
static int count_threads(pid_t pid)
{
	char path[64];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)))
		n += d->d_name[0] >= '0' && d->d_name[0] <= '9';
	closedir(dir);
	return n;
}

/* A process whose main thread has exited shows 'Z' while its other
 * threads (libckpt's manager thread, at least) are still on their way
 * out; its parent cannot see it as exited yet, so its image would not
 * record it. Only a zombie with no thread left is one. */
bool local_process_gone(pid_t pid)
{
	char s = local_process_state(pid);

	if (s == 'Z' || s == 'X' || s == 'x')
		return count_threads(pid) <= 1;
	return s == 0;
}

/* The connected process of this host whose vouched pid is pid, or NULL
 * (pid 0 matches none). */
struct conn *local_process_conn(const struct coordinator *co, pid_t pid)
{
	for (size_t i = 0; pid > 0 && i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (c->kind == CONN_PROCESS && !c->eof &&
		    c->proc.local_pid == pid && proc_on_this_host(c))
			return c;
	}
	return NULL;
}

static struct conn *member_with_pid(struct coordinator *co, pid_t pid)
{
	struct conn *c = local_process_conn(co, pid);

	return c && c->proc.round_generation == co->round.generation ? c
								     : NULL;
}

static void expect(struct round *r, pid_t pid, pid_t parent)
{
	for (int i = 0; i < r->nexpected; i++)
		if (r->expected[i].pid == pid)
			return;
	if (r->nexpected == COORD_MAX_EXPECTED)
		return; /* the rest is seen at the next look */
	r->expected[r->nexpected++] = (struct expected_proc){
		.pid = pid, .parent = parent, .since_ms = now_ms(),
	};
}

/* The children one thread lists, at most max of them, into out; how
 * many. */
static int thread_children(int task_dir, const char *tid, pid_t *out,
			   int max)
{
	char path[300], list[4096], *p, *end;
	ssize_t len;
	int fd, n = 0;

	snprintf(path, sizeof(path), "%s/children", tid);
	fd = openat(task_dir, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, list, sizeof(list) - 1);
	close(fd);
	list[len > 0 ? len : 0] = 0;
	for (p = list; *p && n < max; p = end) {
		long child = strtol(p, &end, 10);

		if (end == p)
			break;
		if (child > 0)
			out[n++] = (pid_t)child;
	}
	return n;
}

/* The children of every thread of local process `pid`, at most max of
 * them, into out; how many. Read for every member of every round: the
 * thread directory by getdents64 directly, stopping at a batch that left
 * room for another entry (the kernel fills a batch until the directory
 * ends or the next entry does not fit), so one call instead of
 * opendir's fstat and readdir's second getdents64. */
int local_children(pid_t pid, pid_t *out, int max)
{
	union {
		char bytes[8192];
		struct dirent64 first;
	} batch;
	char path[64];
	long len;
	int dir, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return 0;
	do {
		len = getdents64(dir, batch.bytes,
				 sizeof(batch.bytes));
		for (long at = 0; at < len && n < max;) {
			struct dirent64 *d =
				(struct dirent64 *)(batch.bytes + at);

			if (d->d_name[0] >= '0' && d->d_name[0] <= '9')
				n += thread_children(dir, d->d_name, out + n,
						     max - n);
			at += d->d_reclen;
		}
	} while (len > 0 && n < max &&
		 (size_t)len + sizeof(struct dirent64) + NAME_MAX + 1 >
		 sizeof(batch.bytes));
	close(dir);
	return n;
}

void members_forget_children(struct conn *c)
{
	free(c->proc.children);
	c->proc.children = NULL;
	c->proc.nchildren = 0;
	c->proc.children_listed = false;
}

/* A SUSPENDED that lists the process's children (CKPT_RESULT_F_CHILDREN,
 * docs/protocol.md): kept for this round, so /proc is not read for them.
 * Only from a process on this host: the pids are its pid namespace's,
 * which is ours only for a pid the kernel vouched for. */
void members_note_children(struct coordinator *co, struct conn *c,
			   const struct ckpt_msg_result *res, const char *p,
			   uint32_t len)
{
	size_t n;

	members_forget_children(c);
	if (!round_in(co, c) || res->generation != co->round.generation ||
	    !(res->flags & CKPT_RESULT_F_CHILDREN) || len < sizeof(*res) ||
	    !proc_on_this_host(c))
		return;
	n = (len - sizeof(*res)) / sizeof(int32_t);
	if (n > CKPT_SUSPENDED_MAX_CHILDREN)
		return;
	c->proc.children = malloc(n ? n * sizeof(pid_t) : 1);
	if (!c->proc.children)
		return; /* read from /proc then */
	memcpy(c->proc.children, p + sizeof(*res), n * sizeof(pid_t));
	c->proc.nchildren = (int)n;
	c->proc.children_listed = true;
}

static void expect_children_of(struct coordinator *co, struct conn *c)
{
	pid_t read_kids[COORD_MAX_EXPECTED], *kids = c->proc.children;
	int n = c->proc.nchildren;

	if (!c->proc.children_listed) {
		kids = read_kids;
		n = local_children(c->proc.local_pid, kids,
				   COORD_MAX_EXPECTED);
	}
	for (int i = 0; i < n; i++)
		if (!member_with_pid(co, kids[i]))
			expect(&co->round, kids[i], c->proc.local_pid);
}

void members_on_join(struct coordinator *co, struct conn *c)
{
	struct round *r = &co->round;

	if (!r->active || r->writing || r->failed)
		return; /* it joins the next round */
	c->proc.round_generation = r->generation;
	c->proc.state = PROC_SUSPENDING;
	round_timeouts_on_answer(c);
	members_forget_children(c);
	r->nprocs++;
	conn_send(c, CKPT_MSG_DO_SUSPEND, &(struct ckpt_msg_do_checkpoint){
			  .generation = r->generation },
		  sizeof(struct ckpt_msg_do_checkpoint));
}

bool members_on_left_while_suspending(struct coordinator *co,
				      struct conn *c)
{
	if (!proc_on_this_host(c))
		return false;
	expect(&co->round, c->proc.local_pid, 0);
	co->round.nprocs--;
	return true;
}

/* The program name of pid (its comm), "" if unknown. */
static void program_of(pid_t pid, char *name, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = ckpt_proc_read(path, name, len);
	if (n < 0)
		name[0] = 0;
	else if (n > 0 && name[n - 1] == '\n')
		name[n - 1] = 0;
}

/* Does the status text show a set-ID program's credentials (an
 * effective user or group other than the real one)? */
static bool runs_set_id(const char *status)
{
	static const char *const fields[] = { "\nUid:", "\nGid:" };

	for (size_t i = 0; i < 2; i++) {
		const char *p = strstr(status, fields[i]);
		char *end;
		long real, effective;

		if (!p)
			continue;
		real = strtol(p + 5, &end, 10);
		effective = strtol(end, NULL, 10);
		if (real != effective)
			return true;
	}
	return false;
}

/* The process runs in another pid namespace than the coordinator (a
 * sandbox such as bwrap --unshare-pid, unshare --pid, a container's
 * init): its libckpt could not join with the pids the computation
 * knows. False when it cannot be told. */
#define PID_NAMESPACE_OF_ITS_OWN "runs in a pid namespace of its own (a " \
	"sandbox such as bwrap --unshare-pid or unshare --pid, or a " \
	"container), which ckpt does not checkpoint"

static bool in_other_pid_namespace(pid_t pid)
{
	char path[64], mine[64], its[64];
	ssize_t a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	a = readlink("/proc/self/ns/pid", mine, sizeof(mine) - 1);
	b = readlink(path, its, sizeof(its) - 1);
	return a > 0 && b > 0 && (a != b || memcmp(mine, its, (size_t)a));
}

/* A member that joined over the Unix socket from another pid namespace
 * (its pid is not the one the kernel gave at accept: a child of
 * `unshare --pid --fork`): its pids are not the computation's, and its
 * libckpt looks in a /proc of another namespace. Said into what before
 * any process is stopped (true), so that the round is refused at once. */
bool member_in_other_pid_namespace(const struct coordinator *co, char *what,
				   size_t len)
{
	if (co->is_tcp)
		return false;
	for (size_t i = 0; i < co->nconns; i++) {
		const struct conn *c = co->conns[i];

		if (c->kind != CONN_PROCESS || c->eof || c->proc.local_pid ||
		    c->peer_pid <= 0 || !in_other_pid_namespace(c->peer_pid))
			continue;
		snprintf(what, len, "process %d (%s; pid %d inside) "
			 PID_NAMESPACE_OF_ITS_OWN,
			 (int)c->peer_pid, c->proc.hello.program,
			 (int)c->proc.hello.real_pid);
		return true;
	}
	return false;
}

static void fail_missing(struct coordinator *co, const struct expected_proc *e)
{
	char what[512], path[64], buf[2048], prog[64], parent[64] = "";
	int uid;

	program_of(e->pid, prog, sizeof(prog));
	if (e->parent)
		snprintf(parent, sizeof(parent), ", a child of pid %d",
			 (int)e->parent);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)e->pid);
	if (ckpt_proc_read(path, buf, sizeof(buf)) < 0)
		buf[0] = 0;
	uid = ckpt_proc_field(buf, "Uid");
	if (ckpt_proc_field(buf, "Seccomp") > 0)
		snprintf(what, sizeof(what), "process %d (%s)%s runs under a "
			 "seccomp filter and did not join the computation "
			 "within %d s: a sandbox that forbids the calls libckpt "
			 "joins with (socket, connect; man-db's pipeline is one, "
			 "MAN_DISABLE_SECCOMP=1 lifts it); the images would miss "
			 "it", (int)e->pid, prog, parent,
			 COORD_JOIN_TIMEOUT_MS / 1000);
	else if (uid >= 0 && (uid_t)uid != geteuid())
		snprintf(what, sizeof(what), "process %d (%s)%s runs as uid %d "
			 "now: it changed its user after the launch (as "
			 "man-db or nginx's workers started as root do), and "
			 "ckpt cannot checkpoint it; the images would miss it",
			 (int)e->pid, prog, parent, uid);
	else if (in_other_pid_namespace(e->pid))
		snprintf(what, sizeof(what), "process %d (%s)%s "
			 PID_NAMESPACE_OF_ITS_OWN "; it did not join the "
			 "computation, and the images would miss it",
			 (int)e->pid, prog, parent);
	else if (runs_set_id(buf))
		snprintf(what, sizeof(what), "process %d (%s)%s runs a "
			 "set-user/group-ID program (its effective user or "
			 "group is not its real one: Debian's ssh-agent is "
			 "set-group-ID _ssh), into which the loader does not "
			 "preload libckpt; it did not join the computation, and "
			 "the images would miss it", (int)e->pid, prog, parent);
	else
		snprintf(what, sizeof(what), "process %d (%s)%s did not join "
			 "the computation within %d s (a static or set-ID "
			 "program, or one started without libckpt?); the images "
			 "would miss it", (int)e->pid, prog, parent,
			 COORD_JOIN_TIMEOUT_MS / 1000);
	round_note_failure(co, ESRCH, what);
}

/* Every member is suspended: 1 when nobody else is to be waited for, 0
 * to look again at r->next_member_check_ms, -1 when someone never came
 * (the round fails). */
int members_complete(struct coordinator *co)
{
	struct round *r = &co->round;
	int64_t now = now_ms();
	int kept = 0, missing = 0, restarts;

	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (c->kind == CONN_PROCESS && !c->eof &&
		    c->proc.round_generation == r->generation &&
		    c->proc.state == PROC_SUSPENDED && proc_on_this_host(c))
			expect_children_of(co, c);
	}
	for (int i = 0; i < r->nexpected; i++) {
		struct expected_proc *e = &r->expected[i];

		if (member_with_pid(co, e->pid) || local_process_gone(e->pid))
			continue;
		if (now - e->since_ms >= COORD_JOIN_TIMEOUT_MS) {
			fail_missing(co, e);
			missing++;
			continue;
		}
		r->expected[kept++] = *e;
	}
	r->nexpected = missing ? 0 : kept;
	r->next_member_check_ms = kept && !missing ?
				  now + COORD_JOIN_CHECK_MS : 0;
	if (missing)
		return -1;
	restarts = restart_groups_complete(co, &r->next_member_check_ms);
	return kept == 0 && restarts;
}
