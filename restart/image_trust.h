/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whose image is it. An image is code: the restarted program runs what
 * the image holds with the credentials of whoever runs ckpt_restart (the
 * image records none, and restart never changes uid or gid). So an image
 * is restarted only if it is the caller's own file and nobody else may
 * write it (docs/security.md, "Images are code").
 */
#ifndef CKPT_RESTART_IMAGE_TRUST_H
#define CKPT_RESTART_IMAGE_TRUST_H

#include <stddef.h>
#include <sys/types.h>

/* 0 if the open image fd is a file of our effective uid that neither its
 * group nor other users may write. Else -EPERM (-errno if fstat fails)
 * and, in why, "owned by alice (uid 1001), not by you (root, uid 0),
 * mode 0600" (owner and mode are always named). */
int image_trust_check(int fd, char *why, size_t len);
/* "alice, uid 1001": who runs the restarted program. */
void image_trust_caller(char *buf, size_t len);

#endif /* CKPT_RESTART_IMAGE_TRUST_H */
