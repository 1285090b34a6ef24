// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_command: send one command to a coordinator and print its reply.
 * Exit 0 on success, 1 on failure (the reply or the reason on stderr),
 * 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/control.h"
#include "ckpt/protocol.h"
#include "../protocol/sanitize.h"
#include "snapshot_files.h"
#include "tool_common.h"
#include "checkpoint_progress.h"

#define CONNECT_TIMEOUT_MS	5000
#define CHECKPOINT_TIMEOUT_MS	600000	/* coordinator gives up at 300 s */
#define KILL_TIMEOUT_MS		60000	/* coordinator gives up at 10 s */
#define QUICK_TIMEOUT_MS	10000

static void usage(FILE *f)
{
	fprintf(f,
"Usage: ckpt_command [--coord ADDR] COMMAND\n"
"Send COMMAND to the ckpt coordinator and print its reply.\n"
"\n"
"Commands (exactly one):\n"
"  -c, --checkpoint     checkpoint every process now; prints image paths,\n"
"                       and on stderr what a restart will not restore\n"
"     --compress        with --checkpoint: compress this checkpoint's\n"
"                       images (zstd; a process launched with\n"
"                       ckpt_launch --compress compresses all of its)\n"
"     --incremental     with --checkpoint: write only what changed since\n"
"                       each process's previous image (a delta of its\n"
"                       chain; ckpt_launch --incremental: every image)\n"
"     --forked          with --checkpoint: each process forks a frozen\n"
"                       copy that writes its image while the program\n"
"                       runs on (it stops only to be copied); returns\n"
"                       once every image is durable, as always\n"
"  -s, --status         coordinator address, processes, interval, last\n"
"                       checkpoint, running round, accelerator use\n"
"  -l, --list           one line per process\n"
"     --json           with --status, --list or --checkpoint: the reply\n"
"                       as one JSON object on stdout (docs/json.md)\n"
"  -i, --interval N     checkpoint every N seconds (0: off)\n"
"  -k, --kill           kill every process of the computation\n"
"     --snapshot        freeze a copy of every process in memory (a\n"
"                       frozen template process each; a tree's write\n"
"                       their images on its first restore); prints its id\n"
"     --snapshots       one line per snapshot: ID AGE_MS KIB DIR KIND\n"
"                       (KIND: image, template:PID or templates:PID,...)\n"
"     --restore ID      kill every process and restore snapshot ID\n"
"                       (the restored processes run on this command's\n"
"                       stdio; it exits with them)\n"
"     --stopped         with --restore: the restored processes stop\n"
"                       themselves (SIGSTOP) for a debugger to attach;\n"
"                       a template's restored pid is said on stderr\n"
"     --drop ID         free snapshot ID\n"
"     --from-snapshot ID  with --checkpoint: copy snapshot ID's images\n"
"                       into $CKPT_DIR (else the current directory) as\n"
"                       ordinary images and print their paths\n"
"  -q, --quit           kill every process, then stop the coordinator\n"
"\n"
"  --coord ADDR         Unix socket path or HOST:PORT (default:\n"
"                       $CKPT_COORD, else the per-user socket)\n"
"  --help, --version\n"
"\n"
"On a terminal, --checkpoint shows its progress on stderr (bytes\n"
"written, rate, time left).\n"
"\n"
"Exit status: 0 success, 1 failure, 2 bad usage.\n");
}

struct request {
	const char *coord;
	uint32_t cmd;
	uint32_t arg;
	int compress;			/* --compress */
	int incremental;		/* --incremental */
	int json;			/* --json */
	int forked;			/* --forked */
	uint64_t snapshot;		/* --restore, --drop, --from-snapshot */
	int from_snapshot;		/* --checkpoint --from-snapshot */
	int stopped;			/* --restore --stopped */
	int timeout_ms;
};

static void set_cmd(struct request *q, uint32_t cmd, int timeout_ms)
{
	if (q->cmd) {
		fprintf(stderr, "ckpt_command: give exactly one command "
			"(see --help)\n");
		exit(2);
	}
	q->cmd = cmd;
	q->timeout_ms = timeout_ms;
}

static uint32_t parse_seconds(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > UINT32_MAX) {
		fprintf(stderr, "ckpt_command: bad interval '%s': expected "
			"seconds (0 = off)\n", s);
		exit(2);
	}
	return (uint32_t)v;
}

/* --restore: images, kill, then ckpt_restart (not a wire command). */
#define CMD_RESTORE 1000

static uint64_t parse_id(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || !v ||
	    v > UINT32_MAX) {
		fprintf(stderr, "ckpt_command: bad snapshot id '%s': expected "
			"a number > 0 (ckpt_command --snapshots lists them)\n",
			s);
		exit(2);
	}
	return v;
}

static void parse_args(int argc, char **argv, struct request *q)
{
	static const struct option longopts[] = {
		{ "coord", required_argument, NULL, 'C' },
		{ "checkpoint", no_argument, NULL, 'c' },
		{ "compress", no_argument, NULL, 'z' },
		{ "incremental", no_argument, NULL, 'I' },
		{ "json", no_argument, NULL, 'J' },
		{ "forked", no_argument, NULL, 'F' },
		{ "snapshot", no_argument, NULL, 'n' },
		{ "snapshots", no_argument, NULL, 'N' },
		{ "restore", required_argument, NULL, 'R' },
		{ "drop", required_argument, NULL, 'D' },
		{ "from-snapshot", required_argument, NULL, 'f' },
		{ "stopped", no_argument, NULL, 'P' },
		{ "status", no_argument, NULL, 's' },
		{ "list", no_argument, NULL, 'l' },
		{ "interval", required_argument, NULL, 'i' },
		{ "kill", no_argument, NULL, 'k' },
		{ "quit", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "csli:kqh", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'C':
			q->coord = optarg;
			break;
		case 'c':
			set_cmd(q, CKPT_CMD_CHECKPOINT, CHECKPOINT_TIMEOUT_MS);
			break;
		case 'z':
			q->compress = 1;
			break;
		case 'I':
			q->incremental = 1;
			break;
		case 'J':
			q->json = 1;
			break;
		case 'F':
			q->forked = 1;
			break;
		case 'n':
			set_cmd(q, CKPT_CMD_SNAPSHOT, CHECKPOINT_TIMEOUT_MS);
			break;
		case 'N':
			set_cmd(q, CKPT_CMD_SNAPSHOTS, QUICK_TIMEOUT_MS);
			break;
		case 'R':
			set_cmd(q, CMD_RESTORE, KILL_TIMEOUT_MS);
			q->snapshot = parse_id(optarg);
			break;
		case 'D':
			set_cmd(q, CKPT_CMD_DROP, QUICK_TIMEOUT_MS);
			q->snapshot = parse_id(optarg);
			break;
		case 'P':
			q->stopped = 1;
			break;
		case 'f':
			q->from_snapshot = 1;
			q->snapshot = parse_id(optarg);
			break;
		case 's':
			set_cmd(q, CKPT_CMD_STATUS, QUICK_TIMEOUT_MS);
			break;
		case 'l':
			set_cmd(q, CKPT_CMD_LIST, QUICK_TIMEOUT_MS);
			break;
		case 'i':
			set_cmd(q, CKPT_CMD_INTERVAL, QUICK_TIMEOUT_MS);
			q->arg = parse_seconds(optarg);
			break;
		case 'k':
			set_cmd(q, CKPT_CMD_KILL, KILL_TIMEOUT_MS);
			break;
		case 'q':
			set_cmd(q, CKPT_CMD_QUIT, KILL_TIMEOUT_MS);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("ckpt_command (ckpt) %s, protocol %d\n",
			       CKPT_VERSION, CKPT_PROTOCOL_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ckpt_command: unexpected argument '%s' "
			"(see --help)\n", argv[optind]);
		exit(2);
	}
	if (!q->cmd) {
		fprintf(stderr, "ckpt_command: no command given (see "
			"--help)\n");
		exit(2);
	}
	if ((q->compress || q->incremental || q->forked ||
	     q->from_snapshot) && q->cmd != CKPT_CMD_CHECKPOINT) {
		fprintf(stderr, "ckpt_command: --%s goes with --checkpoint "
			"only\n", q->compress ? "compress" : q->incremental ?
			"incremental" : q->forked ? "forked" :
			"from-snapshot");
		exit(2);
	}
	if (q->stopped && q->cmd != CMD_RESTORE) {
		fprintf(stderr, "ckpt_command: --stopped goes with --restore "
			"only\n");
		exit(2);
	}
	if (q->json && q->cmd != CKPT_CMD_CHECKPOINT &&
	    q->cmd != CKPT_CMD_STATUS && q->cmd != CKPT_CMD_LIST) {
		fprintf(stderr, "ckpt_command: --json goes with --status, "
			"--list or --checkpoint only\n");
		exit(2);
	}
	if (q->json && q->from_snapshot) {
		fprintf(stderr, "ckpt_command: --json does not go with "
			"--from-snapshot (its reply is the copied images' "
			"paths)\n");
		exit(2);
	}
}

/* The reply carries text from the processes (failure messages, names):
 * its control characters are shown as \xHH, never sent to the terminal. */
static void print_text(FILE *f, const char *text)
{
	size_t n = strlen(text), cap = 4 * n + 1;
	char *safe = malloc(cap);

	if (!safe) {
		fprintf(stderr, "ckpt_command: out of memory for the reply\n");
		exit(1);
	}
	ckpt_sanitize_copy(safe, cap, text, n, true);
	fputs(safe, f);
	if (n && text[n - 1] != '\n')
		fputc('\n', f);
	free(safe);
}

/* What a restart of the new checkpoint will not restore, one line per
 * thing, naming its process: the checkpoint itself succeeded. */
static void print_warnings(const char *warnings)
{
	const char *line, *end;

	for (line = warnings; *line; line = *end ? end + 1 : end) {
		char safe[4096];

		end = strchrnul(line, '\n');
		if (end == line)
			continue;
		ckpt_sanitize_copy(safe, sizeof(safe), line,
				   (size_t)(end - line), false);
		fprintf(stderr, "warning: %s\n", safe);
	}
}

/* The request through libckpt-control (include/ckpt/control.h). */
static int send_request(struct ckpt_control *c, const struct request *q,
			struct ckpt_control_reply *rep,
			struct ckpt_control_error *err)
{
	uint64_t id;

	switch (q->cmd) {
	case CKPT_CMD_CHECKPOINT:
		if (q->from_snapshot)
			return ckpt_control_snapshot_images(c, q->snapshot,
							    rep, err);
		return ckpt_control_checkpoint(c, (q->compress ?
					       CKPT_CONTROL_COMPRESS : 0) |
					       (q->incremental ?
						CKPT_CONTROL_INCREMENTAL : 0) |
					       (q->forked ?
						CKPT_CONTROL_FORKED : 0),
					       rep, err);
	case CKPT_CMD_STATUS:
		return ckpt_control_status(c, rep, err);
	case CKPT_CMD_LIST:
		return ckpt_control_list(c, rep, err);
	case CKPT_CMD_INTERVAL:
		return ckpt_control_set_interval(c, q->arg, rep, err);
	case CKPT_CMD_KILL:
		return ckpt_control_kill(c, rep, err);
	case CKPT_CMD_SNAPSHOT:
		return ckpt_control_snapshot(c, &id, rep, err);
	case CKPT_CMD_SNAPSHOTS:
		return ckpt_control_snapshots(c, rep, err);
	case CKPT_CMD_DROP:
		return ckpt_control_drop(c, q->snapshot, rep, err);
	case CMD_RESTORE:
		return ckpt_control_restore_template(c, q->snapshot, rep, err);
	default:
		return ckpt_control_quit(c, rep, err);
	}
}

/* --json: the reply's JSON on stdout as it came (json_out.h escaped
 * every control character), whether the command succeeded or not. */
static int print_json_reply(const struct ckpt_control_reply *rep,
			    const struct ckpt_control_error *err)
{
	if (rep->text[0] != '{') {	/* an error in text, or too old */
		print_text(stderr, rep->text);
		if (!rep->status)
			fprintf(stderr, "ckpt_command: %s\n", err->message);
		return 1;
	}
	fputs(rep->text, stdout);
	print_warnings(rep->warnings);
	if (rep->status)
		fprintf(stderr, "ckpt_command: the coordinator reports "
			"failure: %s (the \"errors\" of the JSON say more)\n",
			tool_strerror(rep->status));
	return rep->status ? 1 : 0;
}

/* --restore: ckpt_restart on the images (returns only on failure);
 * --from-snapshot: the images copied out of memory. */
static int finish_snapshot_use(const struct request *q,
			       struct ckpt_control_reply *rep)
{
	const char *dir = getenv("CKPT_DIR");
	char cwd[4096];
	int r;

	fflush(stdout);
	if (q->cmd == CMD_RESTORE && snapshot_is_template(rep->text))
		return snapshot_template_restore(rep->text, q->stopped);
	if (q->cmd == CMD_RESTORE && snapshot_has_templates(rep->text))
		return snapshot_tree_restore(&rep->text, q->stopped);
	if (q->cmd == CMD_RESTORE) {
		snapshot_exec_restart(rep->text, q->stopped);
		return 1;
	}
	if (!dir || !dir[0])
		dir = getcwd(cwd, sizeof(cwd)) ? cwd : ".";
	r = snapshot_copy_images(rep->text, dir);
	ckpt_control_reply_free(rep);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct request q = { 0 };
	struct ckpt_control c;
	struct ckpt_control_reply rep = { 0 };
	struct ckpt_control_error err;
	struct checkpoint_progress progress = { 0 };
	int r;

	parse_args(argc, argv, &q);
	if (ckpt_control_open(&c, q.coord, &err) < 0) {
		fprintf(stderr, "ckpt_command: %s\n", err.message);
		return 1;
	}
	c.json = q.json;
	if (q.cmd == CKPT_CMD_CHECKPOINT)
		checkpoint_progress_start(&progress, &c);
	send_request(&c, &q, &rep, &err);
	checkpoint_progress_stop(&progress);
	if (!rep.text) {	/* no answer at all */
		fprintf(stderr, "ckpt_command: %s\n", err.message);
		return 1;
	}
	if (q.json) {
		r = print_json_reply(&rep, &err);
		ckpt_control_reply_free(&rep);
		return r;
	}
	if (!rep.status && (q.cmd == CMD_RESTORE || q.from_snapshot))
		return finish_snapshot_use(&q, &rep);
	print_text(rep.status ? stderr : stdout, rep.text);
	print_warnings(rep.warnings);
	if (rep.status && !rep.text[0])
		fprintf(stderr, "ckpt_command: the coordinator reports "
			"failure: %s\n", tool_strerror(rep.status));
	ckpt_control_reply_free(&rep);
	return rep.status ? 1 : 0;
}
