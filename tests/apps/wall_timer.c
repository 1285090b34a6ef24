/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wall_timer DELAY_S PERIOD_MS READS: a CLOCK_REALTIME TFD_TIMER_ABSTIME
 * timerfd, first due DELAY_S seconds from now, then every PERIOD_MS.
 * Prints "armed DEADLINE" (seconds since the epoch), then per read
 * "read N total T" (N: expirations in that read), READS reads, then
 * "OK wall_timer".
 */
#include <sys/timerfd.h>
#include "app_util.h"

int main(int argc, char **argv)
{
	unsigned long delay, period, reads;
	struct itimerspec its = { 0 };
	struct timespec now;
	uint64_t total = 0;
	int fd;

	if (argc != 4)
		die("wall_timer", "usage: wall_timer DELAY_S PERIOD_MS READS");
	delay = parse_ulong("wall_timer", "DELAY_S", argv[1], 1, 3600);
	period = parse_ulong("wall_timer", "PERIOD_MS", argv[2], 1, 100000);
	reads = parse_ulong("wall_timer", "READS", argv[3], 1, 100000);
	fd = timerfd_create(CLOCK_REALTIME, 0);
	if (fd < 0 || clock_gettime(CLOCK_REALTIME, &now) < 0)
		die("wall_timer", "timerfd_create: %s", strerror(errno));
	its.it_value.tv_sec = now.tv_sec + (time_t)delay;
	its.it_interval.tv_sec = (time_t)(period / 1000);
	its.it_interval.tv_nsec = (long)(period % 1000) * 1000000;
	if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		die("wall_timer", "timerfd_settime: %s", strerror(errno));
	say("armed %lld", (long long)its.it_value.tv_sec);
	for (unsigned long i = 0; i < reads; i++) {
		uint64_t n;

		if (read(fd, &n, sizeof(n)) != sizeof(n))
			die("wall_timer", "read: %s", strerror(errno));
		total += n;
		say("read %llu total %llu", (unsigned long long)n,
		    (unsigned long long)total);
	}
	say("OK wall_timer");
	return 0;
}
