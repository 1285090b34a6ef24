// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Who traces a process (a debugger): a process stopped under ptrace cannot
 * be continued with kill -CONT, so the coordinator's diagnosis names the
 * tracer instead. Only for processes on this host.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ckpt/proc_stat.h"
#include "coordinator.h"

/* The TracerPid of /proc/PID/status, 0 when none (or unknown). */
pid_t local_process_tracer(pid_t pid)
{
	char buf[4096], *p;

	if (read_proc_text(pid, "status", buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\nTracerPid:");
	return p ? (pid_t)strtol(p + 11, NULL, 10) : 0;
}

/* "traced by PID N (comm)" into buf, "" when the process is not traced. */
const char *describe_tracer(pid_t pid, char *buf, size_t len)
{
	pid_t tracer = local_process_tracer(pid);
	char comm[64];

	buf[0] = 0;
	if (tracer <= 0)
		return buf;
	snprintf(buf, len, "traced by PID %d (%s)", (int)tracer,
		 ckpt_proc_comm(tracer, comm, sizeof(comm)));
	return buf;
}

/* Is a process of this host with this pid a member of co? */
static bool tracer_is_member(const struct coordinator *co, pid_t tracer)
{
	return local_process_conn(co, tracer) != NULL;
}

/*
 * A member of this host traced by another member (ckpt_launch gdb PROG,
 * ckpt_launch strace -f PROG): no round can work, as the checkpoint
 * would stop the tracer, which then holds its tracee in a tracing stop
 * at the checkpoint signal, and a trace cannot be restored anyway. Said
 * into what before any process is stopped (true), so that the round is
 * refused at once and the debugger is never left stopped.
 */
bool member_traced_by_member(const struct coordinator *co, char *what,
			     size_t len)
{
	for (size_t i = 0; i < co->nconns; i++) {
		const struct conn *c = co->conns[i];
		char tracer[128];
		pid_t by;

		if (c->kind != CONN_PROCESS || c->eof || !proc_on_this_host(c))
			continue;
		by = local_process_tracer(c->proc.local_pid);
		if (by <= 0 || !tracer_is_member(co, by))
			continue;
		describe_tracer(c->proc.local_pid, tracer, sizeof(tracer));
		snprintf(what, len, "process %d (%s) is %s, a process of this "
			 "computation: a traced process cannot be checkpointed "
			 "with its tracer (the checkpoint would stop the tracer "
			 "and leave its tracee stopped, and a trace cannot be "
			 "restored); run the debugger or strace outside "
			 "ckpt_launch", (int)c->proc.local_pid,
			 c->proc.hello.program, tracer);
		return true;
	}
	return false;
}

/* The end of a stalled process's message when it is traced: "; it is
 * stopped, traced by PID N (gdb): ..." for one a debugger holds stopped;
 * a tracer that is itself in the computation (ckpt_launch strace -f,
 * ckpt_launch gdb) was stopped by this checkpoint and holds its tracee in
 * a tracing stop: no trace can be checkpointed that way. "" when not
 * traced. */
const char *stopped_by_tracer_hint(const struct coordinator *co, pid_t pid,
				   char *buf, size_t len)
{
	char tracer[128], state = local_process_state(pid);

	buf[0] = 0;
	if (!describe_tracer(pid, tracer, sizeof(tracer))[0])
		return buf;
	if (tracer_is_member(co, local_process_tracer(pid)))
		snprintf(buf, len, "; it is %s, which is itself in the "
			 "computation and stopped for the checkpoint, so it "
			 "holds its tracee: ckpt cannot checkpoint a tracer "
			 "with its tracees nor restore a trace (run the "
			 "debugger or strace outside ckpt_launch)", tracer);
	else if (state == 'T' || state == 't')
		snprintf(buf, len, "; it is stopped, %s: continue it in the "
			 "debugger, or checkpoint through the debugger's ckpt "
			 "extension (docs/reversible-debugging.md)", tracer);
	return buf;
}
