/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CKPT_RESTART_EMULATOR_EXEC_H
#define CKPT_RESTART_EMULATOR_EXEC_H

/* Exec the loader ELF in fd through $CKPT_RESTART_EMULATOR (emulator_exec.c);
 * returns -errno, or 0 when no emulator is set (exec it directly). */
int emulator_exec(int fd, char **argv, char **envp);

#endif /* CKPT_RESTART_EMULATOR_EXEC_H */
