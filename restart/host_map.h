/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ckpt_restart --host-map OLD=NEW[,...]: the saved socket addresses of
 * hosts that moved, read as their new addresses (restart/host_map.c;
 * docs/multi-host.md, "Restarting on other hosts").
 */
#ifndef CKPT_RESTART_HOST_MAP_H
#define CKPT_RESTART_HOST_MAP_H

#include <stdint.h>
#include "ckpt/restart_plan.h"
#include "image_check.h"

/* The map from list (OLD=NEW,...; numeric, OLD and NEW of one family, no
 * OLD twice). 0, or -EINVAL after saying which entry and why. */
int restart_host_map_parse(const char *list);
/* An AF_INET/AF_INET6 sockaddr whose address is an OLD one gets the NEW
 * one, same port; anything else is left alone. */
void restart_host_map_apply(uint8_t *addr);
/* The same for a socket's own and peer addresses. */
void restart_host_map_socket(struct ckpt_socket_info *si);
/* Every socket of the images whose own address the map moves can bind
 * the new address on this host. 0, or -errno after saying which not. */
int restart_host_map_check(const struct ckpt_image *imgs, int n);
/* The map into the plan, for libckpt: it moves the addresses the
 * program sends to (libckpt-preload/host_moves.c). */
void restart_host_map_plan(struct ckpt_restart_plan *plan);
/* Whether --host-map was given (a restart then always has a plan). */
int restart_host_map_given(void);

#endif
