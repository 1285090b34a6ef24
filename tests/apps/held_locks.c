/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * held_locks MODE STEPS: a lock that records its owner's thread id is
 * held across the whole run while "step K" is printed every 20 ms (a
 * checkpoint lands in the middle), then used the way a program would.
 * After a restart the thread has another kernel tid: the lock must still
 * be its own.
 *
 *   recursive-main    main holds a recursive mutex and re-locks it every
 *                     step (the python3 + sqlite3 hang)
 *   recursive-thread  the same, in a second thread
 *   errorcheck        main holds an error-checking mutex; every step a
 *                     re-lock must say EDEADLK, the final unlock 0
 *   robust            a thread holds a robust mutex and exits without
 *                     unlocking it: main's lock must get EOWNERDEAD
 *   robust-many       the same with 40 robust mutexes: more than the
 *                     per-thread table holds (the rest are found on the
 *                     thread's robust list)
 *   pshared-robust    a child process holds a process-shared robust
 *                     mutex in MAP_SHARED memory and exits without
 *                     unlocking it: the parent's lock must get EOWNERDEAD
 *   pi                main holds a priority-inheritance mutex that a
 *                     second thread waits for; it gets it after the unlock
 *   rwlock            main holds a rwlock for writing, then unlocks it;
 *                     three readers must all get it together
 *   loader-lock       main is inside a dl_iterate_phdr callback (ld.so's
 *                     recursive write lock held) and calls dl_iterate_phdr
 *                     again every step
 *
 * Output: "step K" lines, then "result ..." lines and "done".
 */
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "held_locks"
#define STEP_MS 20

static unsigned long steps;
static pthread_mutex_t lock;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;

static void init_mutex(int type, int robust, int protocol)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	pthread_mutexattr_setrobust(&a, robust);
	pthread_mutexattr_setprotocol(&a, protocol);
	if (pthread_mutex_init(&lock, &a) != 0)
		die(PROG, "pthread_mutex_init failed");
	pthread_mutexattr_destroy(&a);
}

static void expect_rc(const char *what, int got, int want)
{
	expect_eq(PROG, what, got, want);
}

/* The loop every mode holds its lock across; relock says what to do with
 * the lock each step (NULL: nothing). */
static void step_loop(void (*relock)(void))
{
	for (unsigned long i = 1; i <= steps; i++) {
		if (relock)
			relock();
		say("step %lu", i);
		sleep_ms(STEP_MS);
	}
}

static void relock_recursive(void)
{
	expect_rc("recursive re-lock", pthread_mutex_lock(&lock), 0);
	expect_rc("recursive unlock", pthread_mutex_unlock(&lock), 0);
}

static void *recursive_holder(void *arg)
{
	(void)arg;
	expect_rc("first lock", pthread_mutex_lock(&lock), 0);
	step_loop(relock_recursive);
	expect_rc("last unlock", pthread_mutex_unlock(&lock), 0);
	return NULL;
}

static void *try_from_other_thread(void *arg)
{
	int rc = pthread_mutex_trylock(&lock);

	(void)arg;
	if (rc == 0)
		pthread_mutex_unlock(&lock);
	return (void *)(intptr_t)rc;
}

static void run_in_thread(void *(*fn)(void *), void **ret)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL) != 0)
		die(PROG, "pthread_create failed");
	pthread_join(t, ret);
}

static void mode_recursive(int in_thread)
{
	void *rc;

	init_mutex(PTHREAD_MUTEX_RECURSIVE, 0, PTHREAD_PRIO_NONE);
	if (in_thread)
		run_in_thread(recursive_holder, NULL);
	else
		recursive_holder(NULL);
	run_in_thread(try_from_other_thread, &rc);
	say("result released %d", (int)(intptr_t)rc == 0);
}

static void relock_errorcheck(void)
{
	expect_rc("error-checking re-lock", pthread_mutex_lock(&lock),
		  EDEADLK);
}

static void mode_errorcheck(void)
{
	init_mutex(PTHREAD_MUTEX_ERRORCHECK, 0, PTHREAD_PRIO_NONE);
	expect_rc("first lock", pthread_mutex_lock(&lock), 0);
	step_loop(relock_errorcheck);
	say("result unlock %d", pthread_mutex_unlock(&lock));
}

static void *robust_holder(void *arg)
{
	(void)arg;
	expect_rc("robust lock", pthread_mutex_lock(&lock), 0);
	step_loop(NULL);
	return NULL;	/* exits holding it */
}

static void mode_robust(void)
{
	int rc;

	init_mutex(PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ROBUST,
		   PTHREAD_PRIO_NONE);
	run_in_thread(robust_holder, NULL);
	rc = pthread_mutex_lock(&lock);
	say("result lock after owner died %s",
	    rc == EOWNERDEAD ? "EOWNERDEAD" : strerror(rc));
	if (rc == EOWNERDEAD)
		pthread_mutex_consistent(&lock);
	expect_rc("unlock", pthread_mutex_unlock(&lock), 0);
}

#define MANY 40
static pthread_mutex_t many[MANY];

static void *robust_many_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < MANY; i++)
		expect_rc("robust lock", pthread_mutex_lock(&many[i]), 0);
	step_loop(NULL);
	return NULL;	/* exits holding them all */
}

static void mode_robust_many(void)
{
	int dead = 0;

	for (int i = 0; i < MANY; i++) {
		init_mutex(PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ROBUST,
			   PTHREAD_PRIO_NONE);
		many[i] = lock;
	}
	run_in_thread(robust_many_holder, NULL);
	for (int i = 0; i < MANY; i++) {
		int rc = pthread_mutex_lock(&many[i]);

		if (rc == EOWNERDEAD) {
			dead++;
			pthread_mutex_consistent(&many[i]);
		}
		expect_rc("unlock", pthread_mutex_unlock(&many[i]), 0);
	}
	say("result %d of %d owner-died", dead, MANY);
}

static void mode_pshared_robust(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int rc, status;
	pid_t child;

	if (m == MAP_FAILED)
		die(PROG, "mmap: %s", strerror(errno));
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(m, &a);
	child = fork();
	if (child < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (child == 0) {
		expect_rc("robust lock in the child", pthread_mutex_lock(m), 0);
		step_loop(NULL);
		_exit(0);	/* holding it */
	}
	if (waitpid(child, &status, 0) != child || status != 0)
		die(PROG, "child: waitpid failed or status %d", status);
	rc = pthread_mutex_lock(m);
	say("result lock after owner died %s",
	    rc == EOWNERDEAD ? "EOWNERDEAD" : strerror(rc));
	if (rc == EOWNERDEAD)
		pthread_mutex_consistent(m);
	expect_rc("unlock", pthread_mutex_unlock(m), 0);
}

static void *pi_waiter(void *arg)
{
	(void)arg;
	expect_rc("PI lock in the waiter", pthread_mutex_lock(&lock), 0);
	say("result waiter got the PI mutex");
	expect_rc("PI unlock in the waiter", pthread_mutex_unlock(&lock), 0);
	return NULL;
}

static void mode_pi(void)
{
	pthread_t t;

	init_mutex(PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_STALLED,
		   PTHREAD_PRIO_INHERIT);
	expect_rc("PI lock", pthread_mutex_lock(&lock), 0);
	if (pthread_create(&t, NULL, pi_waiter, NULL) != 0)
		die(PROG, "pthread_create failed");
	step_loop(NULL);
	say("result PI unlock %d", pthread_mutex_unlock(&lock));
	pthread_join(t, NULL);
	expect_rc("PI lock again", pthread_mutex_lock(&lock), 0);
	expect_rc("PI unlock again", pthread_mutex_unlock(&lock), 0);
}

#define READERS 3
static pthread_barrier_t readers_met;

static void *reader(void *arg)
{
	(void)arg;
	expect_rc("rdlock", pthread_rwlock_rdlock(&rwlock), 0);
	pthread_barrier_wait(&readers_met);	/* all hold it at once */
	expect_rc("reader unlock", pthread_rwlock_unlock(&rwlock), 0);
	return NULL;
}

static void mode_rwlock(void)
{
	pthread_t t[READERS];

	pthread_barrier_init(&readers_met, NULL, READERS);
	expect_rc("wrlock", pthread_rwlock_wrlock(&rwlock), 0);
	step_loop(NULL);
	expect_rc("writer unlock", pthread_rwlock_unlock(&rwlock), 0);
	for (int i = 0; i < READERS; i++)
		pthread_create(&t[i], NULL, reader, NULL);
	for (int i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);
	expect_rc("wrlock again", pthread_rwlock_wrlock(&rwlock), 0);
	expect_rc("unlock again", pthread_rwlock_unlock(&rwlock), 0);
	say("result %d readers shared the lock", READERS);
}

static int count_object(struct dl_phdr_info *info, size_t size, void *n)
{
	(void)info;
	(void)size;
	++*(int *)n;
	return 0;
}

static void iterate_again(void)
{
	int n = 0;

	dl_iterate_phdr(count_object, &n);
	if (n < 2)
		die(PROG, "dl_iterate_phdr saw %d objects", n);
}

static int hold_loader_lock(struct dl_phdr_info *info, size_t size, void *a)
{
	(void)info;
	(void)size;
	(void)a;
	step_loop(iterate_again);
	return 1;	/* once */
}

static void mode_loader_lock(void)
{
	dl_iterate_phdr(hold_loader_lock, NULL);
	iterate_again();
	say("result loader lock released");
}

int main(int argc, char **argv)
{
	const char *mode;

	if (argc != 3)
		die(PROG, "usage: held_locks MODE STEPS");
	mode = argv[1];
	steps = parse_ulong(PROG, "STEPS", argv[2], 1, 1000000);
	if (!strcmp(mode, "recursive-main"))
		mode_recursive(0);
	else if (!strcmp(mode, "recursive-thread"))
		mode_recursive(1);
	else if (!strcmp(mode, "errorcheck"))
		mode_errorcheck();
	else if (!strcmp(mode, "robust"))
		mode_robust();
	else if (!strcmp(mode, "robust-many"))
		mode_robust_many();
	else if (!strcmp(mode, "pshared-robust"))
		mode_pshared_robust();
	else if (!strcmp(mode, "pi"))
		mode_pi();
	else if (!strcmp(mode, "rwlock"))
		mode_rwlock();
	else if (!strcmp(mode, "loader-lock"))
		mode_loader_lock();
	else
		die(PROG, "unknown mode '%s'", mode);
	say("done");
	return 0;
}
