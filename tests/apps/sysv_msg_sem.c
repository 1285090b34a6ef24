/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sysv_msg_sem N PAUSE_MS: a SysV message queue and a semaphore set
 * (IPC_PRIVATE), kinds ckpt does not save, used at every step: prints
 * "ids msg M sem S" (the test removes them: a killed program leaves
 * them in the kernel), then "tick K" per step, "done" at the end (after
 * removing both).
 */
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>

#include "app_util.h"

#define PROG "sysv_msg_sem"

struct message {
	long type;
	char text[16];
};

int main(int argc, char **argv)
{
	struct sembuf up = { 0, 1, 0 }, down = { 0, -1, 0 };
	struct message m = { 1, "step" };
	unsigned long n, pause_ms;
	int msg, sem;

	if (argc != 3)
		die(PROG, "usage: %s N PAUSE_MS", PROG);
	n = strtoul(argv[1], NULL, 10);
	pause_ms = strtoul(argv[2], NULL, 10);
	msg = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	sem = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	if (msg < 0 || sem < 0)
		die(PROG, "msgget/semget: %s", strerror(errno));
	say("ids msg %d sem %d", msg, sem);
	for (unsigned long k = 1; k <= n; k++) {
		if (msgsnd(msg, &m, sizeof(m.text), 0) < 0 ||
		    msgrcv(msg, &m, sizeof(m.text), 1, 0) < 0 ||
		    semop(sem, &up, 1) < 0 || semop(sem, &down, 1) < 0)
			die(PROG, "step %lu: %s", k, strerror(errno));
		say("tick %lu", k);
		sleep_ms(pause_ms);
	}
	msgctl(msg, IPC_RMID, NULL);
	semctl(sem, 0, IPC_RMID);
	say("done");
	return 0;
}
