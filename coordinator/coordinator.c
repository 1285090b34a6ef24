// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_coordinator: tracks the processes of one computation and runs
 * checkpoint rounds (checkpoint_round.c) and commands (commands.c). One
 * thread, one event loop (conn_events.c); every wait is bounded by a
 * deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/coord_client.h"
#include "../protocol/client_internal.h"
#include "coordinator.h"
#include "../protocol/sanitize.h"

static volatile sig_atomic_t exit_signal;

int64_t now_ms(void)
{
	return ckpt_cc_now_ms();
}

int count_processes(struct coordinator *co)
{
	int n = 0;

	for (size_t i = 0; i < co->nconns; i++)
		if (co->conns[i]->kind == CONN_PROCESS && !co->conns[i]->eof)
			n++;
	return n;
}

const char *proc_name(struct conn *c, char *out, size_t len)
{
	struct ckpt_msg_hello *h = &c->proc.hello;

	snprintf(out, len, "%s (vpid %d, pid %d, host %s)",
		 h->program[0] ? h->program : "?", h->vpid, h->real_pid,
		 h->hostname[0] ? h->hostname : "?");
	/* shown on terminals and in the log; the names stay as they are
	 * (an image's file name is made of them) */
	ckpt_sanitize_in_place(out, false);
	return out;
}

/* Payloads may be shorter (older peer: zero-filled) or longer (newer
 * peer: extra ignored) than our struct. */
static void copy_payload(void *dst, size_t size, const char *p, uint32_t len)
{
	memset(dst, 0, size);
	memcpy(dst, p, len < size ? len : size);
}

/* Checkpoint numbers only grow, across restarts and coordinators: a
 * restarted process brings its image's generation (an older libckpt the
 * one before it, hence + 1) and the computation it belongs to, which a
 * coordinator with no other process takes as its own. Images of the next
 * checkpoint then always outnumber the ones restored from. */
static void continue_numbering(struct coordinator *co,
			       const struct ckpt_msg_hello *h)
{
	uint64_t g = h->generation;

	if ((h->flags & CKPT_HELLO_F_RESTARTED) &&
	    !(h->flags & CKPT_HELLO_F_IMAGE_GENERATION) && g)
		g++;
	if (g > co->generation)
		co->generation = g;
	if ((h->flags & (CKPT_HELLO_F_RESTARTED | CKPT_HELLO_F_REJOIN)) &&
	    h->computation_id &&
	    h->computation_id != co->computation_id &&
	    count_processes(co) == 0) {
		coord_log("continuing computation %016llx from checkpoint %llu "
			  "(was %016llx)",
			  (unsigned long long)h->computation_id,
			  (unsigned long long)co->generation,
			  (unsigned long long)co->computation_id);
		co->computation_id = h->computation_id;
	}
}

static void accept_process(struct coordinator *co, struct conn *c,
			   const char *p, uint32_t len)
{
	struct ckpt_msg_hello *h = &c->proc.hello;
	struct ckpt_msg_welcome w = { 0 };
	char name[256];

	copy_payload(h, sizeof(*h), p, len);
	h->program[sizeof(h->program) - 1] = '\0';
	h->unique_id[sizeof(h->unique_id) - 1] = '\0';
	h->hostname[sizeof(h->hostname) - 1] = '\0';
	memset(h->secret, 0, sizeof(h->secret));	/* unused since v2 */
	if (h->generation > CKPT_GENERATION_MAX) {
		/* a forged or corrupt number would wrap the counter */
		coord_log("rejected process %s from %s: checkpoint generation "
			  "%llu is beyond %llu (a forged or corrupt image?)",
			  proc_name(c, name, sizeof(name)), c->peer,
			  (unsigned long long)h->generation,
			  (unsigned long long)CKPT_GENERATION_MAX);
		c->eof = true;
		return;
	}
	c->proc.local_pid = peer_local_pid(co, c);
	continue_numbering(co, h);	/* before it counts as a process */
	c->kind = CONN_PROCESS;
	c->proc.state = PROC_IDLE;
	co->ever_had_process = true;
	w.computation_id = co->computation_id;
	w.interval_s = co->interval_s;
	w.flags = CKPT_WELCOME_F_UNRESTORED | CKPT_WELCOME_F_CHILDREN;
	w.phase_timeout_ms = (uint32_t)co->phase_timeout_ms;
	w.write_timeout_ms = (uint32_t)co->write_timeout_ms;
	conn_send(c, CKPT_MSG_WELCOME, &w, sizeof(w));
	coord_log("process %s joined from %s%s%s%s%s",
		  proc_name(c, name, sizeof(name)), c->peer,
		  h->flags & CKPT_HELLO_F_RESTARTED ? ", restarted" : "",
		  h->flags & CKPT_HELLO_F_RESTART_GROUP ?
			" with others" : "",
		  h->flags & CKPT_HELLO_F_REJOIN ? ", again" : "",
		  h->flags & CKPT_HELLO_F_ACCEL ? ", accel" : "");
	restart_groups_on_join(co, c);
	members_on_join(co, c);
}

static void accept_command(struct coordinator *co, struct conn *c,
			   const char *p, uint32_t len)
{
	struct ckpt_msg_cmd cmd;

	copy_payload(&cmd, sizeof(cmd), p, len);
	c->kind = CONN_COMMAND;
	command_handle(co, c, &cmd);
}

static void handle_process_msg(struct coordinator *co, struct conn *c,
			       const struct ckpt_msg_header *hdr,
			       const char *p)
{
	struct ckpt_msg_result res;
	char name[256];

	switch (hdr->type) {
	case CKPT_MSG_SUSPENDED:
	case CKPT_MSG_WRITTEN:
	case CKPT_MSG_SYNCED:
	case CKPT_MSG_DURABLE:
	case CKPT_MSG_FAILED:
		copy_payload(&res, sizeof(res), p, hdr->len);
		res.path[sizeof(res.path) - 1] = '\0';
		res.message[sizeof(res.message) - 1] = '\0';
		ckpt_sanitize_in_place(res.message, false);
		if (hdr->type == CKPT_MSG_SUSPENDED)
			members_note_children(co, c, &res, p, hdr->len);
		round_on_result(co, c, hdr->type, &res);
		break;
	case CKPT_MSG_UNRESTORED:
		round_on_unrestored(co, c, p, hdr->len);
		break;
	default:
		coord_log("process %s sent unexpected message type %u; "
			  "ignored", proc_name(c, name, sizeof(name)),
			  hdr->type);
	}
}

static void handle_msg(struct coordinator *co, struct conn *c,
		       const struct ckpt_msg_header *hdr, const char *p)
{
	if (auth_needed(c)) {
		auth_handle_msg(co, c, hdr, p);
	} else if (c->kind == CONN_PROCESS) {
		handle_process_msg(co, c, hdr, p);
	} else if (hdr->type == CKPT_MSG_CMD) {
		accept_command(co, c, p, hdr->len);
	} else if (c->kind == CONN_NEW && hdr->type == CKPT_MSG_HELLO) {
		accept_process(co, c, p, hdr->len);
	} else {
		coord_log("%s: unexpected message type %u from a %s "
			  "connection; closing it", c->peer, hdr->type,
			  c->kind == CONN_NEW ? "new" : "command");
		c->eof = true;
	}
}

void conn_read(struct coordinator *co, struct conn *c)
{
	struct ckpt_msg_header hdr;
	const char *payload;
	int r;

	conn_fill(c);
	/* messages that arrived before a disconnect still count */
	while ((r = conn_next_msg(c, &hdr, &payload)) == 1) {
		c->last_msg_ms = now_ms();
		handle_msg(co, c, &hdr, payload);
		conn_drop_msg(c, &hdr);
		if (c->close_after_flush)
			break;
	}
	if (r == -EBADMSG) {
		coord_log("%s: message type %u with a wrong MAC (altered, "
			  "injected or replayed); closing the connection",
			  c->peer, hdr.type);
		c->eof = true;
	} else if (r < 0 && !c->local_peer &&
		   hdr.version == CKPT_PROTOCOL_VERSION_UNIX_OLD) {
		coord_log("%s: closing a protocol version 1 connection: over "
			  "TCP it sends the secret in clear (a process from an "
			  "older ckpt or image; use a Unix socket for it)",
			  c->peer);
		c->eof = true;
	} else if (r < 0) {
		coord_log("%s: bad message header (magic %#x, version %u, "
			  "length %u); closing the connection", c->peer,
			  hdr.magic, hdr.version, hdr.len);
		c->eof = true;
	}
}

/* Whether the next message waiting for c (in its buffer, else in its
 * socket, peeked) is a HELLO. */
static bool next_msg_is_hello(struct conn *c)
{
	struct ckpt_msg_header hdr;

	if (c->in.len >= sizeof(hdr))
		memcpy(&hdr, c->in.data, sizeof(hdr));
	else if (c->in.len > 0 ||
		 recv(c->fd, &hdr, sizeof(hdr), MSG_PEEK | MSG_DONTWAIT) !=
		 (ssize_t)sizeof(hdr))
		return false;
	return hdr.magic == CKPT_MSG_MAGIC && hdr.type == CKPT_MSG_HELLO;
}

/*
 * Before a round counts its members. libckpt sends HELLO and lets the
 * program run without waiting for WELCOME, so a launched program can be
 * running, even answering its clients, while its HELLO still waits in
 * the coordinator's socket (or its connection in the listener's queue):
 * a checkpoint asked for meanwhile found no process, or missed that
 * one. Accept what waits and read each new connection whose next message
 * is a HELLO; nothing else is read here (a command waits for the loop,
 * so no round starts inside another's start).
 */
void conn_catch_up_hellos(struct coordinator *co)
{
	if (co->listen_fd >= 0 && !guard_listener_paused(co))
		listener_accept(co);
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (c->kind == CONN_NEW && !c->eof && c->fd >= 0 &&
		    !auth_needed(c) && next_msg_is_hello(c))
			conn_read(co, c);
	}
}

static void on_gone(struct coordinator *co, struct conn *c)
{
	char name[256];

	if (c->kind != CONN_PROCESS)
		return;
	coord_log("process %s left", proc_name(c, name, sizeof(name)));
	round_on_gone(co, c);
}

/* Handle disconnects (which may fail a round and send to others, which
 * may find more broken peers), then free them. */
static void reap(struct coordinator *co)
{
	bool again = true;
	size_t j = 0;

	while (again) {
		again = false;
		for (size_t i = 0; i < co->nconns; i++) {
			struct conn *c = co->conns[i];

			if (c->close_after_flush && !c->out.len)
				c->eof = true;
			if (c->eof && !c->reaped) {
				c->reaped = true;
				on_gone(co, c);
				again = true;
			}
		}
	}
	for (size_t i = 0; i < co->nconns; i++) {
		if (co->conns[i]->reaped)
			conn_free(co->conns[i]);
		else
			co->conns[j++] = co->conns[i];
	}
	co->nconns = j;
	kill_check(co);
}

static void run_interval(struct coordinator *co, int64_t now)
{
	if (!co->interval_s || !co->next_interval_ms ||
	    now < co->next_interval_ms || co->round.active)
		return;
	co->next_interval_ms = now + (int64_t)co->interval_s * 1000;
	if (count_processes(co) > 0) {
		coord_log("interval checkpoint (every %u s)", co->interval_s);
		round_request(co, NULL, 0);
	}
}

static void run_timers(struct coordinator *co)
{
	int64_t now = now_ms();

	guard_check_timeouts(co);
	round_check_timeouts(co);
	run_interval(co, now);
	kill_check(co);
}

static int64_t next_deadline(struct coordinator *co)
{
	int64_t d = round_next_deadline(co);

	d = deadline_earlier(d, guard_next_deadline(co));
	if (!co->round.active)
		d = deadline_earlier(d, co->next_interval_ms);
	d = deadline_earlier(d, co->kill_deadline);
	d = deadline_earlier(d, co->killed_check_ms);
	if (!co->daemon && !co->ever_had_process)
		d = deadline_earlier(d, co->started_ms + COORD_IDLE_EXIT_MS);
	if (!co->daemon && co->empty_since_ms)
		d = deadline_earlier(d, co->empty_since_ms + COORD_LINGER_MS);
	return d;
}

static bool busy_with_clients(struct coordinator *co)
{
	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		if (c->kind == CONN_NEW || c->pending != PENDING_NONE)
			return true;
	}
	return false;
}

static bool should_exit(struct coordinator *co)
{
	if (exit_signal) {
		coord_log("exiting on signal %d", (int)exit_signal);
		return true;
	}
	if (co->quit) {
		coord_log("exiting on QUIT");
		return true;
	}
	if (co->daemon || co->round.active || co->kill_deadline)
		return false;
	if (!co->ever_had_process || count_processes(co) ||
	    busy_with_clients(co)) {
		co->empty_since_ms = 0;
	} else if (!co->empty_since_ms) {
		/* A process that execs leaves and joins again a moment
		 * later: linger before deciding it was the last one. */
		co->empty_since_ms = now_ms();
	} else if (now_ms() - co->empty_since_ms >= COORD_LINGER_MS) {
		coord_log("the last process left; exiting");
		return true;
	}
	if (!co->ever_had_process &&
	    now_ms() - co->started_ms >= COORD_IDLE_EXIT_MS) {
		coord_log("no process connected within %d s; exiting",
			  COORD_IDLE_EXIT_MS / 1000);
		return true;
	}
	return false;
}

/* Last replies (QUIT's, for one) get a bounded chance to leave. */
static void flush_all(struct coordinator *co)
{
	int64_t deadline = now_ms() + COORD_EXIT_FLUSH_MS;

	for (size_t i = 0; i < co->nconns; i++) {
		struct conn *c = co->conns[i];

		while (c->out.len && !c->eof &&
		       ckpt_cc_wait_fd(c->fd, POLLOUT, deadline) == 0)
			conn_flush(c);
		conn_free(c);
	}
	co->nconns = 0;
}

static void on_signal(int sig)
{
	exit_signal = sig;
}

/* Termination signals are blocked except inside epoll_pwait(), so none is
 * lost between the check and the wait. */
static void setup_signals(sigset_t *wait_mask)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, wait_mask);
	sigdelset(wait_mask, SIGTERM);
	sigdelset(wait_mask, SIGINT);
	sigdelset(wait_mask, SIGHUP);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: ckpt_coordinator [--coord ADDR] [--daemon] [-i SECONDS]\n"
"                        [--phase-timeout S] [--write-timeout S]\n"
"Coordinate checkpoints of the processes started with ckpt_launch.\n"
"\n"
"  --coord ADDR     Unix socket path or HOST:PORT (default: $CKPT_COORD,\n"
"                   else ($XDG_RUNTIME_DIR or /tmp)/ckpt-UID/coordinator.sock)\n"
"  --daemon         run in the background and keep running when no\n"
"                   process is left (default: exit with the last process)\n"
"  -i, --interval SECONDS  checkpoint every SECONDS (0: off, the default)\n"
"  --phase-timeout SECONDS  bound of a round's suspend phase, and of a\n"
"                   writer without progress (x2) (default: $CKPT_PHASE_TIMEOUT,\n"
"                   else 5)\n"
"  --write-timeout SECONDS  bound of a round's write, sync and commit\n"
"                   phases, each (default: $CKPT_WRITE_TIMEOUT, else 120)\n"
"  --notify-fd FD   write \"ready\" or \"error ERRNO MESSAGE\" to FD once\n"
"                   listening (used by ckpt_launch)\n"
"  --help, --version\n"
"\n"
"Control it with ckpt_command; the protocol is in docs/protocol.md.\n");
}

struct options {
	const char *coord;
	bool daemon;
	long interval;
	int notify_fd;
	double phase_timeout_s;		/* 0: environment or default */
	double write_timeout_s;
};

static int parse_number(const char *s, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	if (errno || end == s || *end || *out < 0 || *out > max)
		return -EINVAL;
	return 0;
}

/* Seconds, fractions allowed (0.5), from 0.1 to a day. */
static double parse_timeout(const char *what, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.1 && v <= 86400)) {
		fprintf(stderr, "ckpt_coordinator: bad %s '%s': expected "
			"seconds from 0.1 to 86400\n", what, s);
		exit(2);
	}
	return v;
}

/* The option, else the environment variable, else the default. */
static int64_t timeout_ms(double option_s, const char *what,
			  const char *env, int64_t def_ms)
{
	const char *v = getenv(env);

	if (option_s > 0)
		return (int64_t)(option_s * 1000);
	if (v && v[0])
		return (int64_t)(parse_timeout(what, v) * 1000);
	return def_ms;
}

static void parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "coord", required_argument, NULL, 'c' },
		{ "daemon", no_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "notify-fd", required_argument, NULL, 'n' },
		{ "phase-timeout", required_argument, NULL, 'P' },
		{ "write-timeout", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	long fd;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:di:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o->coord = optarg;
			break;
		case 'd':
			o->daemon = true;
			break;
		case 'i':
			if (parse_number(optarg, UINT32_MAX, &o->interval) < 0) {
				fprintf(stderr, "ckpt_coordinator: bad interval "
					"'%s': expected seconds (0 = off)\n",
					optarg);
				exit(2);
			}
			break;
		case 'n':
			if (parse_number(optarg, INT_MAX, &fd) < 0 ||
			    fcntl((int)fd, F_GETFD) < 0) {
				fprintf(stderr, "ckpt_coordinator: bad "
					"--notify-fd '%s'\n", optarg);
				exit(2);
			}
			o->notify_fd = (int)fd;
			break;
		case 'P':
			o->phase_timeout_s = parse_timeout("--phase-timeout",
							   optarg);
			break;
		case 'W':
			o->write_timeout_s = parse_timeout("--write-timeout",
							   optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("ckpt_coordinator (ckpt) %s, protocol %d\n",
			       CKPT_VERSION, CKPT_PROTOCOL_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ckpt_coordinator: unexpected argument '%s'\n",
			argv[optind]);
		exit(2);
	}
}

static void notify(int fd, const char *line)
{
	if (fd < 0)
		return;
	if (write(fd, line, strlen(line)) < 0)
		coord_log("cannot write to --notify-fd %d: %s", fd,
			  strerror(errno));
	close(fd);
}

static void startup_fail(int notify_fd, int err, const char *msg)
{
	char line[1200];

	fprintf(stderr, "ckpt_coordinator: %s\n", msg);
	snprintf(line, sizeof(line), "error %d ckpt_coordinator: %s\n",
		 err > 0 ? err : EIO, msg);
	notify(notify_fd, line);
	exit(1);
}

/* Fork into the background once listening; the parent reports the pid. */
static void daemonize(struct coordinator *co)
{
	pid_t pid = fork();
	int null_fd;

	if (pid < 0)
		startup_fail(co->notify_fd, errno, "cannot fork into the "
			     "background");
	if (pid > 0) {
		printf("ckpt_coordinator: listening on %s in the background "
		       "(pid %d)\n", co->addr, (int)pid);
		exit(0);
	}
	setsid();
	null_fd = open("/dev/null", O_RDWR);
	if (null_fd >= 0) {
		dup2(null_fd, 0);
		dup2(null_fd, 1);
		dup2(null_fd, 2);
		if (null_fd > 2)
			close(null_fd);
	}
}

static void setup(struct coordinator *co, const struct options *o)
{
	char err[1024];
	int r;

	r = ckpt_coord_resolve_addr(o->coord, co->addr, sizeof(co->addr));
	if (r < 0) {
		snprintf(err, sizeof(err), "cannot use coordinator address "
			 "'%s': %s", o->coord ? o->coord : "(default)",
			 strerror(-r));
		startup_fail(o->notify_fd, -r, err);
	}
	co->is_tcp = ckpt_cc_is_tcp_addr(co->addr);
	co->daemon = o->daemon;
	co->notify_fd = o->notify_fd;
	co->interval_s = (uint32_t)o->interval;
	co->phase_timeout_ms = timeout_ms(o->phase_timeout_s,
					  "CKPT_PHASE_TIMEOUT",
					  "CKPT_PHASE_TIMEOUT",
					  COORD_PHASE_TIMEOUT_MS);
	co->write_timeout_ms = timeout_ms(o->write_timeout_s,
					  "CKPT_WRITE_TIMEOUT",
					  "CKPT_WRITE_TIMEOUT",
					  COORD_WRITE_TIMEOUT_MS);
	co->started_ms = now_ms();
	if (co->interval_s)
		co->next_interval_ms = co->started_ms +
				       (int64_t)co->interval_s * 1000;
	if (getrandom(&co->computation_id, sizeof(co->computation_id), 0) < 0)
		co->computation_id = (uint64_t)co->started_ms ^ getpid();
	r = listener_open(co, err, sizeof(err));
	if (r < 0)
		startup_fail(o->notify_fd, -r, err);
}

int main(int argc, char **argv)
{
	struct options o = { .notify_fd = -1 };
	struct coordinator co = { 0 };
	sigset_t wait_mask;

	parse_args(argc, argv, &o);
	setup_signals(&wait_mask);
	setup(&co, &o);
	if (co.daemon)
		daemonize(&co);
	notify(co.notify_fd, "ready\n");
	if (co.interval_s)
		coord_log("listening on %s, checkpoint every %u s", co.addr,
			  co.interval_s);
	else
		coord_log("listening on %s", co.addr);
	while (!should_exit(&co)) {
		conn_events_wait(&co, next_deadline(&co), &wait_mask);
		reap(&co);
		run_timers(&co);
		reap(&co);
	}
	flush_all(&co);
	snapshots_remove_all(&co);
	listener_close(&co);
	return 0;
}
