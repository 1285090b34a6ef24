/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ckpt_command's side of snapshots (snapshot_files.c). */
#ifndef CKPT_SNAPSHOT_FILES_H
#define CKPT_SNAPSHOT_FILES_H

/* images: one path per line (modified). */
int snapshot_exec_restart(char *images, int stopped);
int snapshot_copy_images(char *images, const char *dir);

/* snapshot_templates.c: the coordinator's "template PID IMAGE" answer */
int snapshot_is_template(const char *text);
int snapshot_template_restore(const char *text, int stopped);
int snapshot_has_templates(const char *text);
int snapshot_tree_restore(char **text, int stopped);

#endif /* CKPT_SNAPSHOT_FILES_H */
