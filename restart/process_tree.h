/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Restarting several images as one computation (restart/process_tree.c)
 * and the pipes between them (restart/restart_pipes.c).
 */
#ifndef CKPT_RESTART_PROCESS_TREE_H
#define CKPT_RESTART_PROCESS_TREE_H

#include "ckpt/restart_plan.h"
#include "image_check.h"

/* Recreate the process tree of the images and exec each loader; returns
 * only in ckpt_restart's own process: its exit status. */
int restart_tree(struct ckpt_image *imgs, int n, const char *coord,
		 const char *ckpt_dir);

/* Create every pipe the images had once, refilled with the bytes in
 * flight, as fds from *keep_fd_end up (which it advances); 0 or -errno
 * after printing why. */
int place_pair(const int fds[2], int first);

/* Make one new pseudo-terminal per saved master (restart_ptys.c), as fds
 * from *keep_fd_end up, in the plan's socket table. 0 or -errno after
 * printing why. */
int restart_ptys_create(struct ckpt_image *imgs, int n,
			struct ckpt_restart_plan *plan, int *keep_fd_end);
/* The new slave standing for a "/dev/pts/N" fd of img, or -1. */
int restart_ptys_slave_of(const struct ckpt_image *img,
			  const struct ckpt_restart_plan *plan);
int fd_record_ino(const struct ckpt_image *img, const struct ckpt_fd_info *f,
		  const char *kind, uint64_t *ino);
int restart_pipes_create(struct ckpt_image *imgs, int n,
			 struct ckpt_restart_plan *plan, int *keep_fd_end);
int refill_pipe(const struct ckpt_image *img, const struct ckpt_fd_info *f,
		unsigned size, int wfd);

/* Open every FIFO of the images once, refilled (restart_fifos.c), as fds
 * from *keep_fd_end up, listed in the plan's file table. 0 or -errno
 * after printing why. */
int restart_fifos_create(struct ckpt_image *imgs, int n,
			 struct ckpt_restart_plan *plan, int *keep_fd_end);

/* Make every connected AF_UNIX stream pair of the images once
 * (restart_sockets.c), as fds from *keep_fd_end up. 0 or -errno after
 * printing why. */
int restart_sockets_create(struct ckpt_image *imgs, int n,
			   struct ckpt_restart_plan *plan, int *keep_fd_end);

/* Make every connected Unix datagram and seqpacket pair of the images
 * once (restart_unix_dgram.c), as fds from *keep_fd_end up, with the
 * messages queued for each end and the fds they carry. 0 or -errno after
 * printing why. */
int restart_unix_dgram_create(struct ckpt_image *imgs, int n,
			      struct ckpt_restart_plan *plan, int *keep_fd_end);
/* In the process that becomes vpid: queue again the messages that carried
 * its credentials. 0 or -errno after printing why. */
int restart_unix_dgram_refill_as(const struct ckpt_restart_plan *plan,
				 int vpid);

/* Make every listening and bound socket of the images again once
 * (restart_listeners.c), as fds from *keep_fd_end up, in the plan's
 * socket table. 0 or -errno after printing why. */
int restart_listeners_create(struct ckpt_image *imgs, int n,
			     struct ckpt_restart_plan *plan, int *keep_fd_end);

/* Queue again in their restored Unix listener the connections that
 * waited there at the checkpoint (restart_sockets.c), their client ends
 * handed through the plan. 0 or -errno after printing why. */
int restart_unix_backlog_create(struct ckpt_image *imgs, int n,
				struct ckpt_restart_plan *plan,
				int *keep_fd_end);

/* Send the datagrams saved with the UDP sockets of the images into the
 * sockets restart_listeners_create made (restart_udp.c); 0 or -errno
 * after printing why. */
int restart_udp_refill(struct ckpt_image *imgs, int n,
		       const struct ckpt_restart_plan *plan);
int socket_same_address(const uint8_t *a, const uint8_t *b);
int clear_stale_unix_path(const uint8_t *addr, uint32_t addr_len, int type,
			  const char **why);
int plan_socket_fd(const struct ckpt_restart_plan *plan, uint64_t ino);
int socket_record_info(const struct ckpt_image *img,
		       const struct ckpt_fd_info *f,
		       struct ckpt_socket_info *si, uint64_t *ino);
int send_image_bytes_that_fit(const struct ckpt_image *img, uint64_t off,
			      uint64_t left, int into, uint64_t *sent);

/* Reconnect every TCP connection whose two ends are both among the
 * images (restart_tcp.c), with the bytes queued both ways, as fds from
 * *keep_fd_end up. 0 or -errno after printing why. */
int restart_tcp_create(struct ckpt_image *imgs, int n,
		       struct ckpt_restart_plan *plan, int *keep_fd_end);

/* Open once every file several processes shared (restart_files.c), as
 * fds from *keep_fd_end up; parent[i] is image i's parent image or -1.
 * 0 or -errno after printing why. */
int restart_files_create(struct ckpt_image *imgs, int n, const int *parent,
			 struct ckpt_restart_plan *plan, int *keep_fd_end);
int place_handed(int fd, int *next_fd);

/* Make once each file deleted while open that several images hold
 * (restart_deleted_files.c), one description per record as fds from
 * *keep_fd_end up. 0 or -errno after printing why. */
int restart_deleted_files_create(struct ckpt_image *imgs, int n,
				 struct ckpt_restart_plan *plan,
				 int *keep_fd_end);
/* The file made for the deleted file of inode ino at path, kept open
 * for restart_shm.c until restart_deleted_files_release(); -1 if none. */
int restart_deleted_file_fd(uint64_t ino, const char *path);
void restart_deleted_files_release(void);

/* Whether a single image has shared memory that needs the plan of
 * restart_shm_create (a SysV segment, a memfd it maps twice): it cannot
 * take the loader's direct path. */
int restart_shm_needed(struct ckpt_image *img);
/* One memfd per shared memory object several images map, filled with
 * its pages (restart_shm.c), as fds from *keep_fd_end up. 0 or -errno
 * after printing why. */
int restart_shm_create(struct ckpt_image *imgs, int n,
		       struct ckpt_restart_plan *plan, int *keep_fd_end);
int plan_add_file(struct ckpt_restart_plan *plan, int vpid, int fd,
		  int handed);

/* Put back the files whose content the images hold (missing files on
 * temporary storage; --save-files and shared-mapped ones always), then
 * warn about each file open for writing that changed since the
 * checkpoint (restart_tmpfiles.c). 0 or -errno after printing why. */
int restart_put_back_files(struct ckpt_image *imgs, int n);

/* Remove the files a process of the computation made exclusively after
 * the images' checkpoint and left behind (include/ckpt/created_journal.h,
 * restart_created.c), saying each; before restart_put_back_files. */
void restart_remove_created_after(struct ckpt_image *imgs, int n);

/* The directory of path ("" when it names none; restart_tmpfiles.c). */
void parent_dir(const char *path, char *dir, size_t len);

/* ckpt_restart has a terminal that is not its controlling terminal (it
 * was started outside the terminal's session, e.g. in a new pty), and the
 * root led a session with one: the root makes a session to take it. */
int root_wants_terminal(const struct ckpt_image *root);

/* ckpt_restart.c: exec the loader for one image; returns only on
 * failure, after printing why. */
void exec_loader(struct ckpt_image *img, const char *coord,
		 const char *ckpt_dir, int plan_fd, int keep_fd_end);

#endif /* CKPT_RESTART_PROCESS_TREE_H */
