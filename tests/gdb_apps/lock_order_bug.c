// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Four workers update mutex-protected structures; the one that draws
 * ticket BAD_TICKET (which one depends on the order the threads took the
 * ticket lock) writes a wrong link, once, and main crashes on it after
 * the join. tests/test_gdb_threads.py asks `ckpt reverse-watch` for the
 * writing thread and line: with the lock order replayed, the same answer
 * every time. Usage: lock_order_bug [ROUNDS [sem]]: with "sem", a
 * semaphore guards the tickets and a rwlock the link.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 4

struct slot {
	pthread_mutex_t lock;
	long count;
};

struct slot slots[WORKERS];
pthread_mutex_t ticket_lock = PTHREAD_MUTEX_INITIALIZER;
sem_t ticket_sem;
pthread_rwlock_t link_lock = PTHREAD_RWLOCK_INITIALIZER;
int other_locks;
long next_ticket;
long bad_ticket;

struct {
	pthread_mutex_t lock;
	struct slot *last;
	int frozen;
} shared = { PTHREAD_MUTEX_INITIALIZER, &slots[0], 0 };

int bad_writer = -1;
int rounds = 1000;

pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
int go;

/* tests/test_gdb_threads.py breaks here: the workers wait for the go */
void started(void)
{
	__asm__ __volatile__("" : : : "memory");
}

static void wait_for_go(void)
{
	pthread_mutex_lock(&go_lock);
	while (!go)
		pthread_cond_wait(&go_cond, &go_lock);
	pthread_mutex_unlock(&go_lock);
}

static long draw_ticket(void)
{
	long t;

	if (other_locks)
		sem_wait(&ticket_sem);
	else
		pthread_mutex_lock(&ticket_lock);
	t = next_ticket++;
	if (other_locks)
		sem_post(&ticket_sem);
	else
		pthread_mutex_unlock(&ticket_lock);
	return t;
}

static void note_last(int id, struct slot *s, long ticket)
{
	if (other_locks)
		pthread_rwlock_wrlock(&link_lock);
	else
		pthread_mutex_lock(&shared.lock);
	if (!shared.frozen) {
		if (ticket == bad_ticket) {
			bad_writer = id;
			shared.last = (struct slot *)0x10; /* the bad write */
			shared.frozen = 1;
		} else {
			shared.last = s;		/* the good write */
		}
	}
	if (other_locks)
		pthread_rwlock_unlock(&link_lock);
	else
		pthread_mutex_unlock(&shared.lock);
}

static void *worker(void *arg)
{
	int id = (int)(long)arg;
	char name[16];

	snprintf(name, sizeof(name), "worker-%d", id);
	pthread_setname_np(pthread_self(), name);
	wait_for_go();
	for (int r = 0; r < rounds; r++) {
		long ticket = draw_ticket();
		struct slot *s = &slots[(id + r) % WORKERS];

		pthread_mutex_lock(&s->lock);
		s->count++;
		pthread_mutex_unlock(&s->lock);
		note_last(id, s, ticket);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[WORKERS];

	if (argc > 1)
		rounds = atoi(argv[1]);
	other_locks = argc > 2 && !strcmp(argv[2], "sem");
	sem_init(&ticket_sem, 0, 1);
	bad_ticket = rounds * WORKERS * 5 / 8;
	for (int i = 0; i < WORKERS; i++)
		pthread_mutex_init(&slots[i].lock, NULL);
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	started();
	pthread_mutex_lock(&go_lock);
	go = 1;
	pthread_cond_broadcast(&go_cond);
	pthread_mutex_unlock(&go_lock);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	printf("bad writer %d\n", bad_writer);
	fflush(stdout);
	printf("last slot count %ld\n", shared.last->count);	/* the crash */
	return 0;
}
