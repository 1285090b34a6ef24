/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A process's start time and state from /proc/PID/stat: the start time
 * (field 22, clock ticks after boot) with the pid names one process for
 * good, as pids are reused. Used by libckpt (the journal of files made,
 * created_journal.c; process attributes, process.c) and ckpt_restart
 * (restart_created.c).
 */
#ifndef CKPT_PROC_STAT_H
#define CKPT_PROC_STAT_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A small /proc file read whole into buf (NUL-terminated); its length,
 * or -1. */
static inline ssize_t ckpt_proc_read(const char *path, char *buf,
				     size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* 0 and the start time, the state letter in *state ('R', 'Z', ...), or
 * -1 when the file cannot be read or parsed. Fields count after the
 * name, which may hold spaces and parentheses: from its last ')'. */
static inline int ckpt_proc_start_time(const char *stat_path,
				       uint64_t *start, char *state)
{
	char buf[1024], *p;
	int field = 2;

	if (ckpt_proc_read(stat_path, buf, sizeof(buf)) < 0)
		return -1;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -1;
	*state = p[2];
	while (p && *p && field < 22) {
		p = strchr(p + 1, ' ');
		field++;
	}
	if (!p)
		return -1;
	*start = strtoull(p + 1, NULL, 10);
	return 0;
}

/* The number after "Name:" in the text of a /proc status file; -1 if
 * absent. */
static inline int ckpt_proc_field(const char *text, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = text; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (!strncmp(p, name, len) && p[len] == ':')
			return atoi(p + len + 1);
	}
	return -1;
}

/* The name of process pid (/proc/PID/comm, without its newline) into
 * comm; "?" when it cannot be read. */
static inline const char *ckpt_proc_comm(int pid, char *comm, size_t len)
{
	char path[32];
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (len < 2 || ckpt_proc_read(path, comm, len) < 0) {
		if (len >= 2)
			strcpy(comm, "?");
		return comm;
	}
	n = strcspn(comm, "\n");
	comm[n] = 0;
	return comm;
}

/* The number after "Name:" in a /proc status file (buf: room to read
 * it); -1 if absent. */
static inline int ckpt_proc_status_field(const char *path, const char *name,
					 char *buf, size_t size)
{
	if (ckpt_proc_read(path, buf, size) < 0)
		return -1;
	return ckpt_proc_field(buf, name);
}

#endif /* CKPT_PROC_STAT_H */
