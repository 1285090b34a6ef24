// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Four workers update mutex-protected structures; the one that draws
 * ticket BAD_TICKET (which one depends on the order the threads took the
 * ticket lock) writes a wrong link, once, and main crashes on it after
 * the join. tests/test_gdb_threads.py asks `ckpt reverse-watch` for the
 * writing thread and line: with the lock order replayed, the same answer
 * every time. Usage: lock_order_bug [ROUNDS [sem|c11]]: with "sem", a
 * semaphore guards the tickets and a rwlock the link; with "c11", a C11
 * mtx_t the tickets, the slots (and, with a cnd_t, the go), a spin lock
 * the link (no pthread mutex in the rounds), and every
 * BARRIER_ROUNDS rounds the workers meet at a barrier, whose serial
 * thread draws an extra ticket.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#define WORKERS 4
#define BARRIER_ROUNDS 64

enum { MUTEXES, SEM_RWLOCK, C11_SPIN_BARRIER };

struct slot {
	pthread_mutex_t lock;
	mtx_t mtx;		/* instead, in c11 */
	long count;
};

struct slot slots[WORKERS];
pthread_mutex_t ticket_lock = PTHREAD_MUTEX_INITIALIZER;
sem_t ticket_sem;
pthread_rwlock_t link_lock = PTHREAD_RWLOCK_INITIALIZER;
int locks_kind;
mtx_t ticket_mtx;
pthread_spinlock_t link_spin;
pthread_barrier_t meeting;
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
mtx_t go_mtx;
cnd_t go_cnd;
int go;

/* tests/test_gdb_threads.py breaks here: the workers wait for the go */
void started(void)
{
	__asm__ __volatile__("" : : : "memory");
}

static void wait_for_go(void)
{
	if (locks_kind == C11_SPIN_BARRIER) {
		mtx_lock(&go_mtx);
		while (!go)
			cnd_wait(&go_cnd, &go_mtx);
		mtx_unlock(&go_mtx);
		return;
	}
	pthread_mutex_lock(&go_lock);
	while (!go)
		pthread_cond_wait(&go_cond, &go_lock);
	pthread_mutex_unlock(&go_lock);
}

static void give_go(void)
{
	if (locks_kind == C11_SPIN_BARRIER) {
		mtx_lock(&go_mtx);
		go = 1;
		cnd_broadcast(&go_cnd);
		mtx_unlock(&go_mtx);
		return;
	}
	pthread_mutex_lock(&go_lock);
	go = 1;
	pthread_cond_broadcast(&go_cond);
	pthread_mutex_unlock(&go_lock);
}

static long draw_ticket(void)
{
	long t;

	if (locks_kind == SEM_RWLOCK)
		sem_wait(&ticket_sem);
	else if (locks_kind == C11_SPIN_BARRIER)
		mtx_lock(&ticket_mtx);
	else
		pthread_mutex_lock(&ticket_lock);
	t = next_ticket++;
	if (locks_kind == SEM_RWLOCK)
		sem_post(&ticket_sem);
	else if (locks_kind == C11_SPIN_BARRIER)
		mtx_unlock(&ticket_mtx);
	else
		pthread_mutex_unlock(&ticket_lock);
	return t;
}

static void lock_link(void)
{
	if (locks_kind == SEM_RWLOCK)
		pthread_rwlock_wrlock(&link_lock);
	else if (locks_kind == C11_SPIN_BARRIER)
		pthread_spin_lock(&link_spin);
	else
		pthread_mutex_lock(&shared.lock);
}

static void unlock_link(void)
{
	if (locks_kind == SEM_RWLOCK)
		pthread_rwlock_unlock(&link_lock);
	else if (locks_kind == C11_SPIN_BARRIER)
		pthread_spin_unlock(&link_spin);
	else
		pthread_mutex_unlock(&shared.lock);
}

static void note_last(int id, struct slot *s, long ticket)
{
	lock_link();
	if (!shared.frozen) {
		if (ticket == bad_ticket) {
			bad_writer = id;
			shared.last = (struct slot *)0x10; /* the bad write */
			shared.frozen = 1;
		} else {
			shared.last = s;		/* the good write */
		}
	}
	unlock_link();
}

/* which thread is the barrier's serial one moves the tickets after it */
static void meet(int id, int r)
{
	if (locks_kind != C11_SPIN_BARRIER || r % BARRIER_ROUNDS)
		return;
	if (pthread_barrier_wait(&meeting) == PTHREAD_BARRIER_SERIAL_THREAD)
		note_last(id, &slots[id], draw_ticket());
}

static void *worker(void *arg)
{
	int id = (int)(long)arg;
	char name[16];

	snprintf(name, sizeof(name), "worker-%d", id);
	pthread_setname_np(pthread_self(), name);
	wait_for_go();
	for (int r = 0; r < rounds; r++) {
		long ticket;

		meet(id, r);
		ticket = draw_ticket();
		struct slot *s = &slots[(id + r) % WORKERS];

		if (locks_kind == C11_SPIN_BARRIER) {
			mtx_lock(&s->mtx);
			s->count++;
			mtx_unlock(&s->mtx);
		} else {
			pthread_mutex_lock(&s->lock);
			s->count++;
			pthread_mutex_unlock(&s->lock);
		}
		note_last(id, s, ticket);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[WORKERS];

	if (argc > 1)
		rounds = atoi(argv[1]);
	if (argc > 2 && !strcmp(argv[2], "sem"))
		locks_kind = SEM_RWLOCK;
	if (argc > 2 && !strcmp(argv[2], "c11"))
		locks_kind = C11_SPIN_BARRIER;
	sem_init(&ticket_sem, 0, 1);
	mtx_init(&ticket_mtx, mtx_plain);
	mtx_init(&go_mtx, mtx_plain);
	cnd_init(&go_cnd);
	pthread_spin_init(&link_spin, PTHREAD_PROCESS_PRIVATE);
	pthread_barrier_init(&meeting, NULL, WORKERS);
	bad_ticket = rounds * WORKERS * 5 / 8;
	for (int i = 0; i < WORKERS; i++) {
		pthread_mutex_init(&slots[i].lock, NULL);
		mtx_init(&slots[i].mtx, mtx_plain);
	}
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	started();
	give_go();
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	printf("bad writer %d\n", bad_writer);
	fflush(stdout);
	printf("last slot count %ld\n", shared.last->count);	/* the crash */
	return 0;
}
