/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Datagrams put back at restart: restart_udp.c on one host,
 * restart_udp_hosts.c between the hosts of a computation. */
#ifndef CKPT_RESTART_UDP_H
#define CKPT_RESTART_UDP_H

#include <stdint.h>
#include <sys/socket.h>
#include "ckpt/image.h"

/* Where to send to reach a UDP socket bound to addr (addr_len bytes):
 * addr, its wildcard IP replaced by host's (loopback when host is NULL).
 * The length of *to. */
socklen_t restart_udp_destination(const uint8_t *addr, uint32_t addr_len,
				  const struct sockaddr_storage *host,
				  struct sockaddr_storage *to);
/* Send the datagram h (its bytes) to `to` from the restored UDP socket
 * bound to h->from, else a new socket bound to it, else any port. */
int restart_udp_send(const struct ckpt_socket_dgram *h, const void *bytes,
		     const struct sockaddr_storage *to, socklen_t tolen);

/* Keep datagram h, waiting at a socket bound to si->addr, for the host
 * its source is on when that is one of --peer-hosts: 1 (kept), 0 (not
 * from a peer host: send it here), -errno. */
int restart_udp_hosts_post(const struct ckpt_socket_info *si,
			   const struct ckpt_socket_dgram *h,
			   const void *bytes);
/* Meet every --peer-hosts host's ckpt_restart: hand over the kept
 * datagrams, send those handed here from their source's restored
 * socket, and return once every peer has sent what it was handed (or
 * after a bounded wait, saying so; then the kept datagrams are sent from
 * here as without a meeting). */
void restart_udp_hosts_meet(uint64_t computation_id);

#endif
