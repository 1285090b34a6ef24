// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_check: probe what this machine allows ckpt to do, like
 * `criu check`. One line per feature, with what ckpt does without it;
 * exit 1 if something ckpt cannot work without is missing.
 * docs/ckpt_check.md describes the checks and the --json schema.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ckpt/json_out.h"
#include "check.h"

#define CHECK_JSON_SCHEMA	1

enum { CHECK_OK = 0, CHECK_MISSING = 1, CHECK_USAGE = 2 };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: ckpt_check [OPTIONS]\n"
"Probe what this machine allows ckpt to do: kernel features, the CPU\n"
"state images record, the coordinator address and the checkpoint\n"
"directory. Each line says what ckpt does without a missing feature.\n"
"\n"
"  --coord ADDR        check this coordinator address (default: as\n"
"                      ckpt_launch: $CKPT_COORD, else the per-user socket)\n"
"  --ckptdir DIR       check this checkpoint directory (default:\n"
"                      $CKPT_DIR, else the current directory)\n"
"  --json              one JSON object on stdout (docs/ckpt_check.md)\n"
"  --help, --version\n"
"\n"
"Exit status: 0 if ckpt can checkpoint and restart here, 1 if something\n"
"it needs is missing (named on stderr), 2 on bad usage.\n");
}

static void run_checks(struct check *checks, int *n,
		       const struct check_places *places)
{
	int i = 0;

	memset(checks, 0, sizeof(*checks) * 16);
	check_kernel_version(&checks[i++]);
	check_pagemap(&checks[i++]);
	check_rseq(&checks[i++]);
	check_clone3_set_tid(&checks[i++]);
	check_kcmp(&checks[i++]);
	check_ptrace_scope(&checks[i++]);
	check_soft_dirty(&checks[i++]);
	check_userfaultfd(&checks[i++]);
	check_uffd_wp(&checks[i++]);
	check_pagemap_scan(&checks[i++]);
	check_accel(&checks[i++]);
	check_cpu_features(&checks[i++]);
	check_coordinator(&checks[i++], places);
	check_ckptdir(&checks[i++], places);
	*n = i;
}

static void print_text(const struct check *checks, int n)
{
	printf("ckpt_check %s: what this machine allows\n", CKPT_VERSION);
	for (int i = 0; i < n; i++) {
		const struct check *c = &checks[i];

		printf("%-15s %-3s  %s\n", c->name, c->available ? "yes" : "no",
		       c->detail);
		if (c->without[0])
			printf("%-15s      %s: %s\n", "", c->available ?
			       "note" : "without it", c->without);
	}
}

static void print_json(const struct check *checks, int n, int usable)
{
	struct json_out j = { stdout, 0 };

	json_open(&j, NULL, '{');
	json_str(&j, "tool", "ckpt_check");
	json_str(&j, "version", CKPT_VERSION);
	json_u64(&j, "schema", CHECK_JSON_SCHEMA);
	json_bool(&j, "usable", usable);
	json_open(&j, "checks", '[');
	for (int i = 0; i < n; i++) {
		const struct check *c = &checks[i];

		json_open(&j, NULL, '{');
		json_str(&j, "name", c->name);
		json_bool(&j, "available", c->available);
		json_bool(&j, "required", c->required);
		json_str(&j, "value", c->value[0] ? c->value : NULL);
		json_str(&j, "detail", c->detail);
		json_str(&j, "without", c->without[0] ? c->without : NULL);
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_close(&j, '}');
	putchar('\n');
}

/* 1 if every required check passed; else each failure on stderr. */
static int report_missing(const struct check *checks, int n)
{
	int usable = 1;

	for (int i = 0; i < n; i++)
		if (checks[i].required && !checks[i].available) {
			fprintf(stderr, "ckpt_check: %s: %s\n", checks[i].name,
				checks[i].detail);
			usable = 0;
		}
	return usable;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "coord", required_argument, NULL, 'C' },
		{ "ckptdir", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	struct check_places places = { NULL, NULL };
	struct check checks[16];
	int json = 0, n, opt, usable;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'C': places.coord = optarg; break;
		case 'd': places.ckptdir = optarg; break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return CHECK_OK;
		case 'V': printf("ckpt_check %s\n", CKPT_VERSION);
			  return CHECK_OK;
		default: usage(stderr); return CHECK_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ckpt_check: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return CHECK_USAGE;
	}
	run_checks(checks, &n, &places);
	fflush(stdout);
	usable = report_missing(checks, n);
	if (json)
		print_json(checks, n, usable);
	else
		print_text(checks, n);
	return usable ? CHECK_OK : CHECK_MISSING;
}
