/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The restart plan of a whole computation: ckpt_restart (restart/
 * process_tree.c) writes it into a memfd shared by every process it
 * forks, before any of them runs the loader; libckpt reads it at restore
 * (vpid/vpid.c: the pid map, libckpt-preload/handover.c: the pipes, the
 * socket pairs and the open files several processes shared;
 * libckpt-preload/tcp_rest.c: the rest of TCP queues). Not on
 * disk; the fd is handed through the loader in struct ckpt_restart_args
 * (version 2: plan_fd).
 *
 * Plain fixed-width types: the loader never reads it, but libckpt reads
 * it with no libc allocation (pread into its own buffers).
 */
#ifndef CKPT_RESTART_PLAN_H
#define CKPT_RESTART_PLAN_H

#include <stdint.h>

#define CKPT_RESTART_PLAN_MAGIC		0x4e414c5054504b43ULL /* "CKPTPLAN" */
#define CKPT_RESTART_PLAN_VERSION	1
#define CKPT_PLAN_MAX_PROCS		1024
#define CKPT_PLAN_MAX_PIPES		256
#define CKPT_PLAN_MAX_FILES		1024
#define CKPT_PLAN_MAX_SOCKETS		4096
#define CKPT_PLAN_MAX_SHM		256
#define CKPT_PLAN_MAX_HOST_MOVES	64
#define CKPT_PLAN_MAX_TCP_RESTS		256

/* One restored process. real_pid is written by the process itself
 * right after ckpt_restart's fork made it; state by its libckpt once its
 * resources are back (libckpt-preload/restart_barrier.c: no program runs
 * before every process of the restart is restored). */
struct ckpt_plan_proc {
	int32_t vpid;
	int32_t vppid;
	int32_t real_pid;		/* 0 until known */
	uint32_t state;			/* CKPT_PLAN_PROC_* (was reserved: 0) */
};

#define CKPT_PLAN_PROC_RESTORED	1
#define CKPT_PLAN_PROC_FAILED	2

/* One pipe of the computation, created once by ckpt_restart (refilled
 * with the bytes in flight at the checkpoint). Every restored process
 * inherits both ends at these numbers and takes the ends it had. */
struct ckpt_plan_pipe {
	uint64_t ino;			/* the pipe's inode at the checkpoint */
	int32_t read_fd;
	int32_t write_fd;
};

/* One fd of one process that shares its open file description with fds
 * of other processes (inherited across fork): ckpt_restart opens the file
 * once, at the saved offset; all entries of one description name the same
 * handed_fd, which every restored process inherits. */
struct ckpt_plan_file {
	int32_t vpid;
	int32_t fd;			/* the fd number in that process */
	int32_t handed_fd;
	uint32_t flags;			/* CKPT_PLAN_FILE_* (was reserved) */
};

/* ckpt_plan_file.flags of a shared event fd (CKPT_FDF_SHARED_EVENT):
 * ckpt_restart made the description empty; the process of the entry
 * marked SETS_STATE puts the saved state in (eventfd counter, timer,
 * epoll interest list) and then sets STATE_SET in the plan, which the
 * other holders wait for before their program runs. */
#define CKPT_PLAN_FILE_SETS_STATE	0x1
#define CKPT_PLAN_FILE_STATE_SET	0x2

/* One end of a connected AF_UNIX stream socket pair, made by
 * ckpt_restart with the bytes queued for it; every process inherits it. */
struct ckpt_plan_socket {
	uint64_t ino;			/* the end's inode at the checkpoint */
	int32_t fd;
	int32_t reserved;
};

/* The two ends of a pseudo-terminal the computation made (a master
 * CKPT_FD_PTY_MASTER with pty_index N) are in the socket table too,
 * under these keys: socket inodes are below 2^32. */
#define CKPT_PLAN_PTY_MASTER(n)	(0x8000000000000000ULL | (uint32_t)(n))
#define CKPT_PLAN_PTY_SLAVE(n)	(0xc000000000000000ULL | (uint32_t)(n))

/* A shared memory object several processes mapped (ckpt_region kind
 * ANON_SHARED with the same file_ino), or a SysV segment even one process
 * attached: one memfd with its content; for a SysV segment also a new
 * segment (IPC_PRIVATE) with the same content, which each process
 * attaches in place and marks removed. */
struct ckpt_plan_shm {
	uint64_t ino;			/* the object's inode at the checkpoint */
	int32_t fd;
	int32_t sysv_id;		/* shmid + 1; 0: none (was reserved) */
};

/* One entry of ckpt_restart --host-map (restart/host_map.c): libckpt
 * sends what the program sends to `from` to `to` instead, when `from`
 * is no entry's `to` (libckpt-preload/host_moves.c). */
struct ckpt_plan_host_move {
	uint32_t family;		/* AF_INET or AF_INET6 */
	uint32_t reserved;
	uint8_t from[16], to[16];	/* 4 bytes used for AF_INET */
};

/* The bytes of a saved TCP (or Unix stream) queue that did not fit into
 * the new connection's buffers (restart/restart_tcp_rest.c): `size` bytes at
 * `offset` of the plan's tcp_rest_fd (a memfd). The process `vpid`
 * writes them into its end `ino` (so they wait in its peer's queue)
 * after the restart barrier and before its program runs; other holders
 * of that end wait for state DONE (libckpt-preload/tcp_rest.c). `sent`
 * is how far the sender got: they wait while it grows. */
struct ckpt_plan_tcp_rest {
	uint64_t ino;			/* the sending end's inode */
	uint64_t offset;
	uint64_t size;
	uint64_t sent;			/* written by the sender */
	int32_t vpid;
	uint32_t state;			/* CKPT_PLAN_REST_* */
};

#define CKPT_PLAN_REST_DONE	1	/* all sent */
#define CKPT_PLAN_REST_GIVEN_UP	2	/* the connection was reset */

struct ckpt_restart_plan {
	uint64_t magic;			/* CKPT_RESTART_PLAN_MAGIC */
	uint32_t version;		/* CKPT_RESTART_PLAN_VERSION */
	uint32_t nprocs;
	uint32_t npipes;
	uint32_t go;			/* set once every real_pid is known */
	uint32_t failed;		/* a process could not be set up */
	uint32_t nfiles;
	uint32_t nsockets;
	uint32_t nshm;			/* was reserved: 0 */
	struct ckpt_plan_proc procs[CKPT_PLAN_MAX_PROCS];
	struct ckpt_plan_pipe pipes[CKPT_PLAN_MAX_PIPES];
	struct ckpt_plan_file files[CKPT_PLAN_MAX_FILES];
	struct ckpt_plan_socket sockets[CKPT_PLAN_MAX_SOCKETS];
	struct ckpt_plan_shm shm[CKPT_PLAN_MAX_SHM];	/* appended */
	/* appended: the head above and every table's offset stay what the
	 * libckpt in older images reads */
	uint32_t nhost_moves;
	uint32_t reserved;
	struct ckpt_plan_host_move host_moves[CKPT_PLAN_MAX_HOST_MOVES];
	/* appended: the rest of TCP queues (tcp_rest_fd valid when
	 * ntcp_rests > 0) */
	uint32_t ntcp_rests;
	int32_t tcp_rest_fd;
	struct ckpt_plan_tcp_rest tcp_rests[CKPT_PLAN_MAX_TCP_RESTS];
};

#endif /* CKPT_RESTART_PLAN_H */
