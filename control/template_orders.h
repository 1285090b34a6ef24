/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Orders to a template snapshot's process (template_orders.c). */
#ifndef CKPT_TEMPLATE_ORDERS_H
#define CKPT_TEMPLATE_ORDERS_H

#include <sys/types.h>
#include "ckpt/protocol.h"

struct template_ref {
	pid_t pid;
	char image[4096];
};

int template_reply_is_template(const char *text);
int template_reply_has_templates(const char *text);
int template_tree_images(char **text, pid_t *failed);
/* "template PID IMAGE": 0, or -EPROTO */
int template_parse(const char *text, struct template_ref *t);
int template_read_report(int fd, int ms, struct ckpt_template_report *rep);
int template_order(const struct template_ref *t, int what, int *rfd,
		   int ms, struct ckpt_template_report *rep);
int template_restore_on(const struct template_ref *t, const int stdio[3],
			int ms, int *rfd, struct ckpt_template_report *rep);
struct ckpt_control;
struct ckpt_control_error;
int template_wait_restored_joined(struct ckpt_control *c, int ms,
				  struct ckpt_control_error *err);
const char *template_strerror(int r);
int template_write_image(const struct template_ref *t);

#endif /* CKPT_TEMPLATE_ORDERS_H */
