/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The TCP ends of the images (restart/restart_tcp.c), shared with the
 * rendezvous of ends whose partner is restarted on another host
 * (restart/restart_tcp_hosts.c; docs/multi-host.md).
 */
#ifndef CKPT_RESTART_TCP_H
#define CKPT_RESTART_TCP_H

#include "process_tree.h"

struct tcp_end {
	uint64_t ino;
	struct ckpt_socket_info si;
	const struct ckpt_image *img;	/* the record with the queue */
	const struct ckpt_fd_info *f;
	uint8_t local[18], remote[18];	/* socket_canonical of addr, peer */
	int done;
};

/* --peer-hosts: the addresses of the computation's other hosts, comma
 * separated, or NULL. */
extern const char *restart_peer_hosts;
/* 0 when list is IP[,IP...], numeric; else -EINVAL after saying why. */
int restart_peer_hosts_check(const char *list);
/* --meet-timeout: how long the meetings with other hosts' ckpt_restarts
 * may take in all, in ms; 0: each meeting's own default (TCP 30 s, UDP
 * 15 s). */
extern long restart_meet_timeout_ms;
/* now_ms + the meeting's bound: --meet-timeout or default_ms. */
long long restart_meet_deadline(long long now_ms, long default_ms);

/* An IPv4 or IPv6 socket address as IPv6 bytes (IPv4 mapped) and port. */
void socket_canonical(const uint8_t *addr, uint8_t out[18]);
/* fd in the plan's socket table as the end `ino`; its new number. */
int restart_tcp_hand(struct ckpt_restart_plan *plan, uint64_t ino, int fd,
		     int *keep_fd_end);
/* Put `size` bytes of img at off into the queue of the peer of `into`
 * (the new socket of end into_ino, held by process vpid): what fits now,
 * the rest through the plan for that process to send
 * (restart_tcp_rest.c). 0 or -errno. */
int restart_tcp_put_queue(struct ckpt_restart_plan *plan,
			  const struct ckpt_image *img, uint64_t off,
			  uint64_t size, int into, uint64_t into_ino,
			  int32_t vpid, int *keep_fd_end);
/* Meet the ckpt_restart of each partner host for every end not done
 * whose peer is on one of restart_peer_hosts. 0 or -errno after printing
 * why. */
int restart_tcp_meet(struct tcp_end *ends, int n,
		     struct ckpt_restart_plan *plan, int *keep_fd_end);

#endif
