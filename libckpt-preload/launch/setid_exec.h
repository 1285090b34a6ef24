/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What exec does to a set-user-ID, set-group-ID or file-capability program
 * for the user running ckpt_launch, and so whether libckpt.so gets in.
 */
#ifndef CKPT_LAUNCH_SETID_EXEC_H
#define CKPT_LAUNCH_SETID_EXEC_H

/* Tell on stderr what happens to the program at path if it is one of
 * those: it runs with other privileges and is not checkpointed, or (the
 * bits change nothing for this caller) it is checkpointed as usual. */
void setid_exec_warn(const char *path);

#endif /* CKPT_LAUNCH_SETID_EXEC_H */
