// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * named_threads: threads with names, each blocked for good in a known
 * call chain, for ckpt_inspect's backtraces (tests/test_inspect.py):
 *   worker-1, worker-2: worker_main -> queue_pop -> pthread_cond_wait
 *   reader:             reader_main -> read_command -> read
 *   sleeper:            sleeper_main -> nap -> nanosleep
 *   main:               main -> wait_for_threads -> pthread_join
 * Prints "ready" once every thread sleeps in its system call (its
 * /proc/self/task/TID/stat state is S), "tid NAME TID" before that.
 */
#include <pthread.h>
#include <sys/syscall.h>
#include "app_util.h"

#define NOINLINE __attribute__((noinline))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int queue_len;			/* nothing is ever queued */
static int command_pipe[2];		/* nothing is ever written */
static volatile pid_t tids[4];

static void note_tid(int i)
{
	tids[i] = syscall(SYS_gettid);
}

NOINLINE int queue_pop(void)
{
	int v;

	pthread_mutex_lock(&lock);
	while (!queue_len)
		pthread_cond_wait(&never, &lock);
	v = --queue_len;
	pthread_mutex_unlock(&lock);
	return v;
}

NOINLINE void *worker_main(void *arg)
{
	note_tid((int)(long)arg);
	say("worker popped %d", queue_pop());
	return NULL;
}

NOINLINE long read_command(int fd)
{
	char c;
	long n = read(fd, &c, 1);

	if (n < 0)
		die("named_threads", "read: %s", strerror(errno));
	return n;
}

NOINLINE void *reader_main(void *arg)
{
	note_tid((int)(long)arg);
	say("reader got %ld", read_command(command_pipe[0]));
	return NULL;
}

NOINLINE int nap(void)
{
	struct timespec left = { 1000000, 0 };
	int naps = 0;

	while (nanosleep(&left, &left) < 0 && errno == EINTR)
		naps++;
	return naps;
}

NOINLINE void *sleeper_main(void *arg)
{
	note_tid((int)(long)arg);
	say("sleeper woke %d", nap());
	return NULL;
}

static int sleeping(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int ok = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		ok = p[2] == 'S';
	if (f)
		fclose(f);
	return ok;
}

static void start(pthread_t *t, const char *name, void *(*fn)(void *),
		  long i)
{
	if (pthread_create(t, NULL, fn, (void *)i))
		die("named_threads", "pthread_create %s failed", name);
	pthread_setname_np(*t, name);
}

NOINLINE int wait_for_threads(pthread_t *threads, int n)
{
	int joined = 0;

	for (int i = 0; i < n; i++)
		joined += pthread_join(threads[i], NULL) == 0;
	return joined;
}

int main(void)
{
	static const char *names[] = { "worker-1", "worker-2", "reader",
				       "sleeper" };
	void *(*fns[])(void *) = { worker_main, worker_main, reader_main,
				   sleeper_main };
	pthread_t threads[4];
	int all;

	if (pipe(command_pipe) < 0)
		die("named_threads", "pipe: %s", strerror(errno));
	for (long i = 0; i < 4; i++)
		start(&threads[i], names[i], fns[i], i);
	do {
		usleep(10000);
		all = 1;
		for (int i = 0; i < 4; i++)
			all &= tids[i] && sleeping(tids[i]);
	} while (!all);
	for (int i = 0; i < 4; i++)
		say("tid %s %d", names[i], (int)tids[i]);
	say("ready");
	say("joined %d", wait_for_threads(threads, 4));
	return 0;
}
