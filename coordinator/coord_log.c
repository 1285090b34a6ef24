// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The coordinator's log: one line per event on stderr. A broken or
 * hostile peer must not be able to flood it, forge lines in it or grow
 * it without end, so every line is
 *
 *   - sanitized: control characters (escape sequences, newlines) from
 *     peer-supplied text are written as \xHH;
 *   - deduplicated: a line identical to the one before is counted, and
 *     "last message repeated N times" written when another line comes or
 *     COORD_LOG_REPEAT_NOTE_MS after the first repeat;
 *   - rate-limited: at most COORD_LOG_BURST lines at once and
 *     COORD_LOG_RATE a second on average; the rest are counted and
 *     reported in one line;
 *   - bounded: when stderr is a regular file that grows past
 *     $CKPT_COORD_LOG_MAX bytes (default COORD_LOG_MAX_BYTES), it is
 *     renamed to FILE.1 (replacing an older one) and a new FILE started,
 *     or, when it cannot be renamed, truncated with a note.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "coordinator.h"
#include "../protocol/sanitize.h"

#define COORD_LOG_LINE_MAX 1024

static struct {
	bool started;
	bool regular;			/* stderr is a file: bound it */
	long long written;		/* bytes in that file */
	long long max;
	char last[COORD_LOG_LINE_MAX];	/* the last line written */
	unsigned long repeats;		/* of it since, not written */
	int64_t repeats_since_ms;
	double tokens;
	int64_t tokens_ms;
	unsigned long suppressed;	/* lines over the rate */
} lg;

static void log_start(void)
{
	const char *env = getenv("CKPT_COORD_LOG_MAX");
	struct stat st;

	lg.started = true;
	lg.max = COORD_LOG_MAX_BYTES;
	if (env && atoll(env) >= 4096)
		lg.max = atoll(env);
	if (fstat(2, &st) == 0 && S_ISREG(st.st_mode)) {
		lg.regular = true;
		lg.written = st.st_size;
	}
	lg.tokens = COORD_LOG_BURST;
	lg.tokens_ms = now_ms();
}

static void emit(const char *text);

/* FILE -> FILE.1 and a fresh FILE on stderr; else truncate in place. */
static void rotate(void)
{
	char path[4096], old[4200], note[4400];
	ssize_t n = readlink("/proc/self/fd/2", path, sizeof(path) - 1);
	long long was = lg.written;
	int fd = -1;

	if (n > 0 && path[0] == '/') {
		path[n] = '\0';
		snprintf(old, sizeof(old), "%s.1", path);
		if (rename(path, old) == 0)
			/* exclusively, never through a symbolic link: the
			 * log may be in a shared directory */
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL |
				  O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
	}
	lg.written = 0;
	if (fd >= 0 && dup2(fd, 2) == 2) {
		close(fd);
		snprintf(note, sizeof(note), "log reached %lld bytes; the "
			 "earlier part is in %s", was, old);
	} else {
		if (fd >= 0)
			close(fd);
		if (ftruncate(2, 0) == 0)
			lseek(2, 0, SEEK_SET);
		snprintf(note, sizeof(note), "log reached %lld bytes; "
			 "truncated it (the earlier part is lost)", was);
	}
	emit(note);
}

static void emit(const char *text)
{
	char line[COORD_LOG_LINE_MAX + 96], stamp[32];
	struct timeval tv;
	struct tm tm;
	int n;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "ckpt_coordinator[%d] %s.%03ld: %s\n",
		     (int)getpid(), stamp, (long)tv.tv_usec / 1000, text);
	if (n >= (int)sizeof(line))
		n = (int)sizeof(line) - 1;
	if (write(2, line, (size_t)n) > 0)
		lg.written += n;
	if (lg.regular && lg.written > lg.max)
		rotate();
}

static void flush_repeats(void)
{
	char note[64];

	if (!lg.repeats)
		return;
	snprintf(note, sizeof(note), "last message repeated %lu time%s",
		 lg.repeats, lg.repeats == 1 ? "" : "s");
	lg.repeats = 0;
	emit(note);
}

/* Refill the bucket; true when one more line may be written. */
static bool take_token(int64_t now)
{
	lg.tokens += (double)(now - lg.tokens_ms) * COORD_LOG_RATE / 1000.0;
	lg.tokens_ms = now;
	if (lg.tokens > COORD_LOG_BURST)
		lg.tokens = COORD_LOG_BURST;
	if (lg.tokens < 1)
		return false;
	lg.tokens -= 1;
	return true;
}

static void flush_suppressed(void)
{
	char note[96];

	if (!lg.suppressed)
		return;
	snprintf(note, sizeof(note), "%lu log line%s suppressed (more than "
		 "%d a second)", lg.suppressed, lg.suppressed == 1 ? "" : "s",
		 COORD_LOG_RATE);
	lg.suppressed = 0;
	emit(note);
}

static void log_line(const char *msg)
{
	int64_t now = now_ms();

	if (!strcmp(msg, lg.last)) {
		if (!lg.repeats++)
			lg.repeats_since_ms = now;
		coord_log_tick();
		return;
	}
	flush_repeats();
	if (!take_token(now)) {
		lg.suppressed++;
		return;
	}
	flush_suppressed();
	emit(msg);
	snprintf(lg.last, sizeof(lg.last), "%s", msg);
}

void coord_log(const char *fmt, ...)
{
	char raw[COORD_LOG_LINE_MAX], msg[COORD_LOG_LINE_MAX];
	va_list ap;
	int n;

	if (!lg.started)
		log_start();
	va_start(ap, fmt);
	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	ckpt_sanitize_copy(msg, sizeof(msg), raw, strlen(raw), false);
	log_line(msg);
}

void coord_log_tick(void)
{
	int64_t now = now_ms();

	if (!lg.started)
		return;
	if (lg.repeats &&
	    now - lg.repeats_since_ms >= COORD_LOG_REPEAT_NOTE_MS)
		flush_repeats();
	if (lg.suppressed && take_token(now))
		flush_suppressed();
}
