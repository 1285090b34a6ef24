/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The on-disk checkpoint image: the single definition of its structs.
 * docs/image-format.md describes the same layout in prose; keep both true.
 *
 * This header is included by freestanding code (restart/loader), so it
 * uses only fixed-width types and no libc.
 *
 * Layout of an image file (all integers little-endian, native x86_64):
 *
 *   offset 0            struct ckpt_image_header (CKPT_HEADER_SIZE bytes)
 *   meta_offset         metadata block, meta_size bytes, hashed as a whole:
 *                         struct ckpt_region  [nregions]
 *                         struct ckpt_extent  [nextents]
 *                         struct ckpt_thread_info [nthreads]  (inspection)
 *                         struct ckpt_fd_info [nfds]          (inspection)
 *                         struct ckpt_file_record [nfiles]    (version 2)
 *                         struct ckpt_image_link [nlinks]     (version 5)
 *                         struct ckpt_signal_state            (version 7)
 *                         struct ckpt_thread_signals [nthread_signals]
 *                         (every byte above: meta_hash)
 *                         string table (NUL-terminated strings)
 *   data_offset         memory and file data, every extent page-aligned
 *                       (each extent: its hash; content saved with an fd
 *                       or file record: that record's data_hash);
 *                       an incremental image's page hashes
 *   image_size          end of file
 */
#ifndef CKPT_IMAGE_H
#define CKPT_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include "ckpt/hash.h"

#define CKPT_IMAGE_MAGIC	"CKPTIMG1"	/* 8 bytes, no NUL */
#define CKPT_IMAGE_VERSION	7	/* 2: file records (nfiles); 3: the
					   content saved with an fd record is
					   hashed (ckpt_fd_info.data_hash);
					   4: extents may be compressed
					   (ckpt_extent.encoding); 5: chains
					   of incremental images
					   (ckpt_extent.source, links, page
					   hashes); 6: an extent's hash may
					   be over its page hashes
					   (CKPT_EXTENT_F_PAGE_HASHED);
					   7: the signal state (signals_
					   offset, for reading) */
/* The oldest version this ckpt reads: 7 only adds header fields and
 * tables, so a version 6 image reads with its signal state "not
 * recorded". */
#define CKPT_IMAGE_VERSION_MIN	6
#define CKPT_HEADER_SIZE	4096
#define CKPT_PROGRAM_MAX	64

/* Architecture ids are ELF e_machine values. */
#define CKPT_ARCH_X86_64	62
#define CKPT_ARCH_AARCH64	183

/* ckpt_image_header.flags */
#define CKPT_IMG_F_HAS_BRK	0x1	/* brk_start/brk_end are meaningful */
#define CKPT_IMG_F_SESSION_LEADER 0x2	/* the process led its session */
#define CKPT_IMG_F_CTTY		0x4	/* it had a controlling terminal */
#define CKPT_IMG_F_MAPPABLE	0x8	/* written by a libckpt that saves
					   memory mapped from its restart
					   image as anonymous memory: a
					   restart may map this image's
					   extents (docs/restart.md) */
#define CKPT_IMG_F_CHAIN	0x10	/* a member of a chain of incremental
					   images (ckpt_launch --incremental):
					   named ckpt_<prog>_<id>.g<generation>
					   .img, carries page hashes; with
					   nlinks > 0 a delta whose extents
					   may lie in the linked images */
#define CKPT_IMG_F_LAUNCHED	0x20	/* the process ckpt_launch became
					   (or a program it exec'd): the
					   one ckpt_restart waits for among
					   several roots (docs/restart.md) */

struct ckpt_image_header {
	char magic[8];			/* CKPT_IMAGE_MAGIC */
	uint32_t version;		/* CKPT_IMAGE_VERSION */
	uint32_t header_size;		/* sizeof(struct ckpt_image_header) */
	uint32_t arch;			/* CKPT_ARCH_* */
	uint32_t page_size;		/* page size at checkpoint */
	uint64_t cpu_features;		/* x86_64: XCR0 (xsave components
					   the process may use) */
	uint64_t flags;			/* CKPT_IMG_F_* */
	uint64_t image_size;		/* total bytes in the file */

	uint64_t meta_offset;		/* start of the metadata block */
	uint64_t meta_size;
	uint64_t meta_hash;		/* ckpt_hash64 of the metadata block */
	uint64_t data_offset;		/* first byte of extent data */

	uint32_t nregions;
	uint32_t nextents;
	uint32_t nthreads;
	uint32_t nfds;
	uint64_t regions_offset;	/* each relative to the file start */
	uint64_t extents_offset;
	uint64_t threads_offset;
	uint64_t fds_offset;
	uint64_t strings_offset;
	uint64_t strings_size;

	/* Where the restart loader hands control to libckpt. */
	uint64_t restore_entry;		/* void entry(struct ckpt_restart_args *) */
	uint64_t restore_stack_top;	/* stack for restore_entry, 16-aligned */
	uint64_t restore_tls;		/* TLS base (fs on x86_64) to set first */

	uint64_t brk_start;		/* [heap] start and program break */
	uint64_t brk_end;

	int32_t vpid;			/* virtual pid of the process */
	int32_t vppid;
	uint64_t generation;		/* checkpoint number in this computation */
	uint64_t ckpt_time_ns;		/* CLOCK_REALTIME at checkpoint */
	char program[CKPT_PROGRAM_MAX];	/* short name, NUL-terminated */
	char unique_id[64];		/* "<hostid>-<pid>-<start time>" */
	uint64_t cpu_features_in_use;	/* x86_64: union of the XSTATE_BV
					   of every saved thread's signal
					   frame, plus x87|SSE */

	uint64_t header_hash;		/* ckpt_hash64 of the first
					   header_size bytes with
					   header_hash = 0 */

	/* Appended after the first version 1 header: header_size tells
	 * whether an image has them (older images read as 0). New fields
	 * go here, at the end. */
	uint64_t computation_id;	/* the coordinator's id of the
					   computation; 0: unknown */
	uint64_t files_offset;		/* file records (version 2) */
	uint32_t nfiles;
	uint32_t unrestored;		/* string table offset of what a
					   restart will not restore, one line
					   each; 0: nothing */
	/* The program's command line and environment as /proc/PID/cmdline
	 * and /proc/PID/environ showed them: NUL-separated strings at
	 * these string table offsets, *_size bytes each (the last NUL
	 * included); 0, 0 = not saved. ckpt_restart execs the loader with
	 * them, so the restarted process shows them again. */
	uint32_t cmdline;
	uint32_t cmdline_size;
	uint32_t environment;
	uint32_t environment_size;
	/* The threads' names (PR_GET_NAME) in thread-record order, one
	 * NUL-terminated string each ("" when unnamed), thread_names_size
	 * bytes at this string table offset; 0, 0 = not saved. */
	uint32_t thread_names;
	uint32_t thread_names_size;
	int32_t manager_vtid;		/* the vtid of libckpt's manager
					   thread; 0 = not recorded */
	uint32_t reserved_tail;		/* 0 */
	/* Incremental images (version 5, CKPT_IMG_F_CHAIN): the images this
	 * one takes extents from (struct ckpt_image_link [nlinks] in the
	 * metadata at links_offset), its place in its chain (1: a full
	 * image, n: the (n-1)th delta after it) and one ckpt_hash64 per
	 * saved page, in extent table order (page_hashes_size bytes at
	 * page_hashes_offset in the data area, hashed as a whole into
	 * page_hashes_hash): the next checkpoint compares memory with
	 * them. 0: none. */
	uint64_t links_offset;
	uint32_t nlinks;
	uint32_t chain_length;
	uint64_t page_hashes_offset;
	uint64_t page_hashes_size;
	uint64_t page_hashes_hash;
	/* The signal state (version 7), for reading only: a restart
	 * restores signals from libckpt's memory. A struct
	 * ckpt_signal_state at signals_offset in the metadata, followed
	 * by nthread_signals struct ckpt_thread_signals in thread-record
	 * order. 0: not recorded (older images). */
	uint64_t signals_offset;
	uint32_t nthread_signals;
	int32_t ckpt_signal;		/* the signal libckpt stops threads
					   with (its own, not the program's);
					   0: none or not recorded */
	/* The checkpoint's processes on this image's host (2026-12-06):
	 * ckpt_restart refuses a set of images of one checkpoint that
	 * holds fewer of a host's than round_members (docs/restart.md,
	 * "Every image of the checkpoint"). 0: not recorded (a snapshot,
	 * an older coordinator or image). */
	uint32_t round_members;
	uint32_t reserved_tail2;	/* 0 */
	char round_host[64];		/* the host name the process joined
					   the coordinator with, NUL-
					   terminated */
};

/* The size of the header before fields were appended to it. */
#define CKPT_HEADER_SIZE_MIN \
	(offsetof(struct ckpt_image_header, header_hash) + 8)

/* The hash of a header page (the CKPT_HEADER_SIZE bytes at offset 0):
 * over its first header_size bytes, header_hash counted as 0. */
static inline uint64_t ckpt_header_hash(const void *page,
					uint32_t header_size)
{
	unsigned char copy[CKPT_HEADER_SIZE];

	if (header_size > CKPT_HEADER_SIZE)
		header_size = CKPT_HEADER_SIZE;
	__builtin_memcpy(copy, page, header_size);
	__builtin_memset(copy + offsetof(struct ckpt_image_header,
					 header_hash), 0, 8);
	return ckpt_hash64(copy, header_size, 0);
}

/* ckpt_region.kind */
enum ckpt_region_kind {
	CKPT_REGION_ANON = 1,		/* private anonymous (incl. bss) */
	CKPT_REGION_HEAP = 2,		/* [heap] */
	CKPT_REGION_STACK = 3,		/* [stack] of the main thread */
	CKPT_REGION_ANON_SHARED = 4,	/* MAP_SHARED|MAP_ANONYMOUS, memfd,
					   deleted shared file: data saved */
	CKPT_REGION_FILE_PRIVATE = 5,	/* file by reference + dirty pages */
	CKPT_REGION_FILE_SHARED = 6,	/* file by reference, no data */
	CKPT_REGION_VDSO = 7,		/* kernel special mappings: address */
	CKPT_REGION_VVAR = 8,		/* only; the name tells which one */
	CKPT_REGION_VVAR_VCLOCK = 9,
	CKPT_REGION_DELETED_PRIVATE = 10, /* private map of a deleted file:
					   all pages saved, restored anon */
};

/* ckpt_region.flags */
#define CKPT_REGION_F_GROWSDOWN	0x1
#define CKPT_REGION_F_NORESERVE	0x2	/* sparse: restore with MAP_NORESERVE */

struct ckpt_region {
	uint64_t start;			/* page-aligned */
	uint64_t end;			/* exclusive */
	uint32_t prot;			/* PROT_READ|PROT_WRITE|PROT_EXEC */
	uint32_t kind;			/* enum ckpt_region_kind */
	uint32_t flags;			/* CKPT_REGION_F_* */
	uint32_t nextents;		/* extents of saved data */
	uint64_t first_extent;		/* index into the extent table */
	uint64_t file_offset;		/* for file kinds: mmap offset */
	uint64_t file_size;		/* st_size at checkpoint */
	uint64_t file_mtime_ns;		/* st_mtim at checkpoint */
	uint64_t file_ino;
	uint32_t name;			/* string table offset of the path or
					   [name]; 0 = no name */
	uint32_t reserved;
};

/* ckpt_region.file_ino of a SysV segment (ANON_SHARED, name "/SYSV..."):
 * its id (the inode number /proc/PID/maps shows) with this bit set, since
 * an id can be 0 (the first segment of an IPC namespace) and file_ino 0
 * means "no shared object". */
#define CKPT_SYSV_OBJECT	(1ULL << 63)

/* ckpt_extent.encoding: how the memory is stored in the file */
enum ckpt_extent_encoding {
	CKPT_EXTENT_RAW = 0,		/* len bytes as they were, page-aligned
					   in the file (a loader may map them) */
	CKPT_EXTENT_ZSTD = 1,		/* one zstd frame of stored_len bytes
					   (content size set, no checksum),
					   decompressing to len bytes; any
					   offset in the file */
};

/* The largest extent: memory is saved in runs of at most this much, so
 * that a writer hashes and compresses each while it is in the cache and
 * a restart decompresses them in parallel. */
#define CKPT_EXTENT_MAX		(4ULL << 20)

/* A run of saved pages of one region. */
struct ckpt_extent {
	uint64_t addr;			/* page-aligned, inside its region */
	uint64_t len;			/* bytes of memory, a page multiple,
					   at most CKPT_EXTENT_MAX */
	uint64_t file_offset;		/* where the stored bytes are: page-
					   aligned for CKPT_EXTENT_RAW */
	uint64_t hash;			/* ckpt_hash64 of the len bytes of
					   memory (decompressed), or of its
					   page hashes: ckpt_extent_hash() */
	uint32_t encoding;		/* enum ckpt_extent_encoding */
	uint32_t stored_len;		/* bytes at file_offset: len when
					   RAW, less when ZSTD (version 4) */
	uint32_t source;		/* which file holds the stored bytes:
					   0 this image, n > 0 link n-1 of its
					   link table (version 5) */
	uint32_t flags;			/* CKPT_EXTENT_F_* (version 6; was
					   reserved, 0) */
};

/* ckpt_extent.flags */
#define CKPT_EXTENT_F_PAGE_HASHED 0x1	/* hash = the ckpt_hash64 of every
					   page folded in order (below), so
					   a writer that knows the hashes of
					   unchanged pages (an incremental
					   image) need not read them */

/* One page's hash folded into an extent's (CKPT_EXTENT_F_PAGE_HASHED):
 * acc starts at 0. */
static inline uint64_t ckpt_page_hash_fold(uint64_t acc, uint64_t page_hash)
{
	return ckpt_hash64(&page_hash, sizeof(page_hash), acc);
}

/* The hash of an extent's len bytes of memory at data, as e->hash holds
 * it (pages of 4096 bytes: the unit of the page hashes on every arch). */
static inline uint64_t ckpt_extent_hash(const struct ckpt_extent *e,
					const void *data)
{
	const unsigned char *p = data;
	uint64_t acc = 0;

	if (!(e->flags & CKPT_EXTENT_F_PAGE_HASHED))
		return ckpt_hash64(data, e->len, 0);
	for (uint64_t off = 0; off < e->len; off += 4096)
		acc = ckpt_page_hash_fold(acc, ckpt_hash64(p + off, 4096, 0));
	return acc;
}

/* The most images a delta may take extents from (its chain less itself;
 * libckpt writes a full image after CKPT_CHAIN_MAX - 1 deltas). */
#define CKPT_LINKS_MAX		31

/* An image a delta takes extents from: a file in the delta's own
 * directory, known by its name and identified by its header hash, so a
 * missing, replaced or damaged link is named at restart. */
struct ckpt_image_link {
	uint64_t generation;		/* the linked image's generation */
	uint64_t header_hash;		/* ... its header_hash */
	uint64_t image_size;		/* ... its image_size */
	uint32_t name;			/* string table offset of its file
					   name (no directory) */
	uint32_t reserved;
};

/* The signal state (version 7): masks have bit n-1 for signal n. */
#define CKPT_NSIG		64

/* One signal's disposition as rt_sigaction(2) reports it. For the
 * checkpoint signal (header ckpt_signal): what the program set on it
 * (SIG_DFL or SIG_IGN: libckpt's handler is not the program's). */
struct ckpt_signal_action {
	uint64_t handler;		/* 0 SIG_DFL, 1 SIG_IGN, else the
					   handler's address */
	uint64_t flags;			/* SA_* as the kernel holds them
					   (SA_RESTORER included) */
	uint64_t restorer;
	uint64_t mask;			/* blocked while it runs */
};

struct ckpt_signal_state {
	struct ckpt_signal_action action[CKPT_NSIG];	/* [n-1]: signal n;
					   SIGKILL, SIGSTOP: all 0 */
	uint64_t process_pending;	/* pending for the process (ShdPnd) */
	uint64_t reserved;		/* 0 */
};

/* One thread's signals, in thread-record order. */
struct ckpt_thread_signals {
	int32_t vtid;
	uint32_t reserved;		/* 0 */
	uint64_t blocked;		/* its signal mask at the checkpoint */
	uint64_t pending;		/* pending for this thread (SigPnd) */
};

/* Informational records (the restart path reads them from memory). */
struct ckpt_thread_info {
	int32_t vtid;
	int32_t is_main;
	uint64_t tls;			/* fs base */
	uint64_t sp;
	uint64_t pc;
};

/* ckpt_fd_info.kind */
enum ckpt_fd_kind {
	CKPT_FD_FILE = 1,		/* regular file: reopened by path */
	CKPT_FD_FILE_DELETED = 2,	/* content saved in the image */
	CKPT_FD_DIR = 3,
	CKPT_FD_DEVICE = 4,		/* character device: reopened */
	CKPT_FD_TTY = 5,		/* reattached to the restarting tty */
	CKPT_FD_STDIO_INHERIT = 6,	/* pipe/socket on 0-2: restarting side */
	CKPT_FD_UNSUPPORTED = 7,	/* replaced by /dev/null, with a warning */
	CKPT_FD_PIPE = 8,		/* path "pipe:[ino]"; the bytes in flight
					   are in the drainer's image (data_*) */
	CKPT_FD_UNIX_STREAM = 9,	/* connected AF_UNIX stream socket,
					   "socket:[ino]", peer_ino; data_*:
					   the bytes queued for this end */
	CKPT_FD_FIFO = 10,		/* named pipe: its path ("PATH
					   (deleted)" once unlinked); offset:
					   its permission bits (st_mode &
					   07777), pipe_size; data_*: the bytes
					   in flight, in the drainer's image */
	/* Event fds, made again inside the restarted process from libckpt's
	 * saved tables (libckpt-preload/event_fds.c); path "anon_inode:[..]",
	 * flags F_GETFL (O_NONBLOCK); offset and event_info summarize the
	 * state for inspection: */
	CKPT_FD_EVENTFD = 11,		/* offset: the counter; event_info:
					   1 with EFD_SEMAPHORE */
	CKPT_FD_TIMERFD = 12,		/* offset: expirations not yet read;
					   event_info: the clock id */
	CKPT_FD_SIGNALFD = 13,		/* offset: the signal mask (bit n-1:
					   signal n) */
	CKPT_FD_EPOLL = 14,		/* offset -1; event_info: how many
					   targets it watches (restored after
					   every other fd) */
	CKPT_FD_INOTIFY = 15,		/* path "anon_inode:inotify"; offset
					   -1; event_info: how many watches a
					   restart adds again (by the paths
					   libckpt recorded, at their watch
					   descriptors) */
	CKPT_FD_PIDFD = 16,		/* path "anon_inode:[pidfd]"; offset:
					   the virtual pid of the process it
					   refers to, -1 if that had ended;
					   event_info: 1 if it had ended */
	CKPT_FD_SOCKET_LISTEN = 20,	/* listening TCP or Unix socket,
					   "socket:[ino]"; data_*: a struct
					   ckpt_socket_info; recreated once by
					   ckpt_restart, shared by ino */
	CKPT_FD_SOCKET_BOUND = 21,	/* UDP socket (bound or not,
					   connected or not: peer_len) or
					   bound, unconnected Unix datagram
					   socket; data_* as above */
	CKPT_FD_SOCKET_OUTSIDE = 22,	/* any other connected socket (TCP,
					   UDP, Unix): a TCP end whose peer
					   end is among the images is
					   reconnected, others restored as
					   closed by the peer; data_* as
					   above */
	CKPT_FD_PTY_MASTER = 40,	/* the master of a pseudo-terminal
					   the computation made (/dev/ptmx):
					   pty_index is its number N
					   (/dev/pts/N); data_*: a struct
					   ckpt_pty_info. ckpt_restart makes a
					   new pty; the CKPT_FD_TTY records of
					   /dev/pts/N take its slave */
	/* Connected AF_UNIX datagram and seqpacket sockets whose peer end
	 * is in the computation (libckpt-preload/unix_dgram.c): remade as
	 * a socketpair of this type by ckpt_restart, "socket:[ino]",
	 * peer_ino; data_*, in the image of the one process that saved the
	 * end: a struct ckpt_unix_queue and the messages queued for it. */
	CKPT_FD_UNIX_DGRAM = 30,
	CKPT_FD_UNIX_SEQPACKET = 31,
};

/* ckpt_socket_info.flags: options the program had set */
#define CKPT_SOCK_F_REUSEADDR	0x1
#define CKPT_SOCK_F_REUSEPORT	0x2
#define CKPT_SOCK_F_V6ONLY	0x4	/* AF_INET6: IPV6_V6ONLY */
#define CKPT_SOCK_F_QUEUE_SAVED	0x8	/* SOCKET_OUTSIDE over TCP: the bytes
					   waiting to be read follow the
					   struct in data_* (this record's
					   process saved them); written by
					   images whose info_size is 0 */
#define CKPT_SOCK_F_QUEUE	0x10	/* the same, in images with
					   info_size: a ckpt_restart that
					   reads only 296-byte structs does
					   not see it and restores the end
					   as closed instead of misreading
					   the queue */
#define CKPT_SOCK_F_DGRAMS	0x20	/* UDP: ndgrams datagrams waiting
					   to be read follow the struct, each
					   a struct ckpt_socket_dgram and its
					   bytes (this record's process saved
					   them) */
/* AF_NETLINK: the boolean SOL_NETLINK options the program had on
 * (libckpt-preload/netlink.c) */
#define CKPT_SOCK_F_NL_PKTINFO		0x100
#define CKPT_SOCK_F_NL_BROADCAST_ERROR	0x200
#define CKPT_SOCK_F_NL_NO_ENOBUFS	0x400
#define CKPT_SOCK_F_NL_LISTEN_ALL_NSID	0x800
#define CKPT_SOCK_F_NL_CAP_ACK		0x1000
#define CKPT_SOCK_F_NL_EXT_ACK		0x2000
#define CKPT_SOCK_F_NL_GET_STRICT_CHK	0x4000

/* ckpt_socket_info.opt[]: socket options as getsockopt read them at
 * checkpoint, set back at restart (include/ckpt/socket_options.h);
 * CKPT_SOCK_OPT_UNSET: not read (not that kind of socket, or the kernel
 * refused), left alone. */
enum ckpt_sock_opt {
	CKPT_SOCK_OPT_NODELAY,		/* TCP_NODELAY */
	CKPT_SOCK_OPT_KEEPALIVE,	/* SO_KEEPALIVE */
	CKPT_SOCK_OPT_KEEPIDLE,		/* TCP_KEEPIDLE */
	CKPT_SOCK_OPT_KEEPINTVL,	/* TCP_KEEPINTVL */
	CKPT_SOCK_OPT_KEEPCNT,		/* TCP_KEEPCNT */
	CKPT_SOCK_OPT_BROADCAST,	/* SO_BROADCAST */
	CKPT_SOCK_OPT_MCAST_TTL,	/* IP_MULTICAST_TTL,
					   IPV6_MULTICAST_HOPS */
	CKPT_SOCK_OPT_MCAST_LOOP,	/* IP(V6)_MULTICAST_LOOP */
	CKPT_SOCK_OPT_LINGER_ON,	/* SO_LINGER: l_onoff */
	CKPT_SOCK_OPT_LINGER_SECS,	/* ... l_linger */
	CKPT_SOCK_OPT_RCVTIMEO_SEC,	/* SO_RCVTIMEO: tv_sec */
	CKPT_SOCK_OPT_RCVTIMEO_USEC,	/* ... tv_usec */
	CKPT_SOCK_OPT_SNDTIMEO_SEC,	/* SO_SNDTIMEO: tv_sec */
	CKPT_SOCK_OPT_SNDTIMEO_USEC,	/* ... tv_usec */
	CKPT_SOCK_OPT_MCAST_ALL,	/* IP(V6)_MULTICAST_ALL */
	CKPT_SOCK_OPT_MCAST_IF,		/* IP_MULTICAST_IF (the address, as
					   its 4 bytes), IPV6_MULTICAST_IF
					   (interface index) */
	CKPT_SOCK_OPT_COUNT,
};
#define CKPT_SOCK_OPT_SLOTS	16	/* room in the struct */
#define CKPT_SOCK_OPT_UNSET	INT32_MIN

/* The content (data_*) of a CKPT_FD_SOCKET_* record, followed by the
 * bytes queued for reading when CKPT_SOCK_F_QUEUE_SAVED or _QUEUE, or the
 * datagrams when CKPT_SOCK_F_DGRAMS. Addresses are struct sockaddr bytes
 * as getsockname/getpeername gave them (*_len bytes; a relative Unix path
 * is made absolute at checkpoint). info_size: the struct's size in the
 * image; 0 in images written before it grew (CKPT_SOCKET_INFO_SIZE_V1
 * bytes, no ndgrams or opt[]): read those as CKPT_SOCK_OPT_UNSET. */
struct ckpt_socket_info {
	uint32_t family;		/* AF_INET, AF_INET6, AF_UNIX,
					   AF_NETLINK */
	uint32_t type;			/* SOCK_STREAM, SOCK_DGRAM, ... */
	uint32_t protocol;		/* SO_PROTOCOL */
	uint32_t flags;			/* CKPT_SOCK_F_* */
	int32_t backlog;		/* listen(2) backlog, from sock_diag */
	int32_t rcvbuf;			/* SO_RCVBUF, SO_SNDBUF as read */
	int32_t sndbuf;
	uint32_t addr_len;		/* bytes of addr: getsockname */
	uint32_t peer_len;		/* bytes of peer: getpeername; 0 none */
	uint32_t info_size;		/* was reserved: see above */
	uint8_t addr[128];
	uint8_t peer[128];
	/* Appended: present when info_size covers them. */
	uint32_t ndgrams;		/* CKPT_SOCK_F_DGRAMS: how many */
	uint32_t ngroups;		/* multicast groups joined (libckpt
					   joins them again from its table) */
	int32_t opt[CKPT_SOCK_OPT_SLOTS];	/* enum ckpt_sock_opt */
	uint32_t path_mode;		/* AF_UNIX bound to a path: st_mode of
					   the socket file there (screen
					   keeps its state in the mode bits),
					   set again after the bind; 0 not
					   known */
};

#define CKPT_SOCKET_INFO_SIZE_V1 offsetof(struct ckpt_socket_info, ndgrams)

/* The bytes of struct ckpt_socket_info at the start of a record's data
 * (the queue or datagrams follow them). */
static inline uint32_t ckpt_socket_info_size(const struct ckpt_socket_info *si)
{
	return si->info_size ? si->info_size : CKPT_SOCKET_INFO_SIZE_V1;
}

/* One datagram saved with a UDP socket (CKPT_SOCK_F_DGRAMS), followed by
 * its size bytes; in the order they were queued. */
struct ckpt_socket_dgram {
	uint32_t size;			/* bytes of the datagram */
	uint32_t from_len;		/* bytes of from: recvfrom's source */
	uint8_t from[28];		/* sockaddr_in or sockaddr_in6 */
	uint32_t reserved;
};

/* ckpt_pty_info.flags */
#define CKPT_PTY_F_PACKET	0x1	/* TIOCPKT packet mode was on */

/* The content (data_*) of a CKPT_FD_PTY_MASTER record: the terminal as
 * the master's TCGETS and TIOCGWINSZ report it (the slave's settings). */
struct ckpt_pty_info {
	uint32_t index;			/* N of /dev/pts/N */
	uint32_t flags;			/* CKPT_PTY_F_* */
	uint32_t iflag, oflag, cflag, lflag;	/* termios */
	uint8_t line;			/* line discipline */
	uint8_t cc[31];			/* c_cc, the kernel's 19 used */
	uint16_t rows, cols;		/* window size */
	uint16_t xpixel, ypixel;
};

/* ckpt_fd_info.fd_flags, above FD_CLOEXEC */
#define CKPT_FDF_CONTENT_SAVED	0x100	/* CKPT_FD_FILE on temporary storage:
					   data_* is the file's content, to
					   recreate it if it is gone */

/* ckpt_fd_info.fd_flags: an fd the process did not have, received at
 * the checkpoint from a queued SCM_RIGHTS message (a "fd in flight"):
 * recorded so that ckpt_restart can make it again and send it; libckpt
 * does not restore it at its number. */
#define CKPT_FDF_IN_FLIGHT	0x200
/* ckpt_fd_info.fd_flags of a CKPT_FD_UNIX_STREAM record whose queue held
 * fds in flight, or whose socket had SO_PASSCRED: its data_* is a struct ckpt_unix_queue and messages, as
 * for CKPT_FD_UNIX_DGRAM (each message: the bytes up to and including
 * one write that carried fds), not plain bytes. */
#define CKPT_FDF_MESSAGES	0x400
/* ckpt_fd_info.fd_flags of an eventfd, timerfd, signalfd or epoll record
 * whose open file description other processes of the checkpoint hold
 * too (inherited across fork, passed over a socket): its data_hash (it
 * has no data_*) is the share group, CKPT_FD_SHARE_GROUP | n as in
 * `share`; ckpt_restart makes the description once and hands it to
 * every holder. */
#define CKPT_FDF_SHARED_EVENT	0x800
/* ckpt_fd_info.fd_flags of a CKPT_FD_SOCKET_OUTSIDE record of a TCP
 * connection that waited in a listener's accept queue at the checkpoint
 * (connected, not yet accepted by the program): its `backlog_of` is the
 * listener's fd in the same image; its fd is only a name. ckpt_restart
 * connects its peer's new socket to the restored listener, where it
 * waits again, with the saved bytes; libckpt does not restore it at its
 * number. */
#define CKPT_FDF_IN_BACKLOG	0x1000

/* ckpt_unix_queue.flags: the socket's options */
#define CKPT_UNIXQ_F_PASSCRED	0x1	/* SO_PASSCRED */

/* The content (data_*) of a CKPT_FD_UNIX_DGRAM or _SEQPACKET record:
 * this struct, then nmsgs times a struct ckpt_unix_msg followed by its
 * nfds int32 fd numbers and its len bytes, in queue order. */
struct ckpt_unix_queue {
	uint32_t flags;			/* CKPT_UNIXQ_F_* */
	int32_t rcvbuf;			/* SO_RCVBUF, SO_SNDBUF as read */
	int32_t sndbuf;
	uint32_t nmsgs;			/* messages queued for reading */
	uint32_t addr_len;		/* getsockname: the bound name (path,
					   abstract), addr_len bytes of a
					   struct sockaddr_un; <= 2: none */
	uint32_t peer_len;		/* getpeername: the peer's name, as
					   addr; a lone end connects to it */
	uint8_t addr[112];
	uint8_t peer[112];
};

/* One queued message (a datagram or record: its boundary is kept). */
struct ckpt_unix_msg {
	uint32_t len;			/* bytes of data */
	uint32_t nfds;			/* SCM_RIGHTS fds it carries: each
					   the number of a CKPT_FDF_IN_FLIGHT
					   record of this image */
	int32_t cred_pid;		/* SCM_CREDENTIALS (the receiver had
					   SO_PASSCRED): the sender's virtual
					   pid, uid, gid; 0 = none */
	uint32_t cred_uid;
	uint32_t cred_gid;
	uint32_t reserved;
};

/* What a restart opens a file again with: ckpt_fd_info.flags less the
 * open-only flags. O_TMPFILE stays set in F_GETFL of a file made with it,
 * and it includes O_DIRECTORY: a regular file would not open (ENOTDIR). */
#define CKPT_FD_REOPEN_FLAGS(flags) \
	((flags) & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY | O_TMPFILE))

/* ckpt_fd_info.share for files, dirs and devices: the open file
 * description is shared with other processes of the checkpoint. */
#define CKPT_FD_SHARE_GROUP	0x80000000u	/* | n: every record of the
						   checkpoint with this value
						   holds one description */

struct ckpt_fd_info {
	int32_t fd;
	uint32_t kind;			/* enum ckpt_fd_kind */
	uint32_t flags;			/* F_GETFL */
	uint32_t fd_flags;		/* F_GETFD | CKPT_FDF_* */
	int64_t offset;			/* lseek position, -1 if none */
	uint32_t path;			/* string table offset */
	union {				/* was reserved: 0 in older images */
		uint32_t pipe_size;	/* CKPT_FD_PIPE, CKPT_FD_FIFO:
					   F_GETPIPE_SZ */
		uint32_t share;		/* files, dirs, devices: 0 none;
					   CKPT_FD_SHARE_GROUP | n: see
					   there; older images: 1 + the fd of
					   the parent process (vppid) that
					   shares this open file description
					   (inherited across fork);
					   CKPT_FD_FILE_DELETED:
					   CKPT_FD_SHARE_GROUP | the inode's
					   low 31 bits (0 in older images) */
		uint32_t peer_ino;	/* CKPT_FD_UNIX_STREAM, _DGRAM,
					   _SEQPACKET: the inode
					   of the connected peer socket */
		uint32_t event_info;	/* CKPT_FD_EVENTFD ... CKPT_FD_EPOLL,
					   CKPT_FD_INOTIFY, CKPT_FD_PIDFD:
					   see there */
		uint32_t pty_index;	/* CKPT_FD_PTY_MASTER: N of the
					   slave /dev/pts/N */
		uint32_t backlog_of;	/* CKPT_FDF_IN_BACKLOG: the fd of
					   the listener it waits in */
	};
	uint64_t data_offset;		/* deleted file: content in the image;
					   pipe: the bytes in flight */
	uint64_t data_size;
	uint64_t data_hash;		/* of data_size bytes at data_offset,
					   as ckpt_file_record.data_hash
					   (version 3) */
};

/* ckpt_file_record.flags: why the file is recorded, and what was saved */
#define CKPT_FILE_F_WRITTEN	0x1	/* open for writing by this process:
					   a restart warns if it changed */
#define CKPT_FILE_F_MAPPED_SHARED 0x2	/* mapped MAP_SHARED: its content is
					   the process's memory */
#define CKPT_FILE_F_TEMPORARY	0x4	/* on temporary storage (tmpfs, /tmp,
					   /var/tmp) */
#define CKPT_FILE_F_SAVE_FILES	0x8	/* matches ckpt_launch --save-files */
#define CKPT_FILE_F_SAVED	0x10	/* the content is in one image of
					   this checkpoint (this or another) */
#define CKPT_FILE_F_CONTENT	0x20	/* ... in this one: data_* */
#define CKPT_FILE_F_TOO_LARGE	0x40	/* TEMPORARY over the size limit:
					   not saved */

/* A regular file a process had open or mapped: identity at checkpoint
 * and, for files on temporary storage (up to a limit) and files matching
 * --save-files, the content, in one image per checkpoint. */
struct ckpt_file_record {
	uint32_t path;			/* string table offset */
	uint32_t flags;			/* CKPT_FILE_F_* */
	uint32_t mode;			/* st_mode & 07777 */
	uint32_t reserved;
	uint64_t dev, ino;
	uint64_t size;			/* st_size at checkpoint */
	uint64_t mtime_ns;		/* st_mtim at checkpoint */
	uint64_t data_offset;		/* CONTENT: page-aligned in the data
					   area, size bytes */
	uint64_t data_hash;		/* CONTENT: see CKPT_FILE_HASH_CHUNK */
};

/* data_hash (file and fd records): h = 0, then h = ckpt_hash64(chunk,
 * len, h) over consecutive chunks of this many bytes (the last one
 * shorter). */
#define CKPT_FILE_HASH_CHUNK	(1U << 20)

#endif /* CKPT_IMAGE_H */
