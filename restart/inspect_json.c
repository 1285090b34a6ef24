// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_inspect --json (inspect_json.h): what the text shows, as data.
 * Addresses, hashes and feature masks are "0x..." strings (JSON numbers
 * lose precision past 2^53); sizes and counts are numbers.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "ckpt/json_out.h"
#include "ckpt/sockaddr_text.h"
#include "image_trust.h"
#include "inspect_backtrace.h"
#include "inspect_json.h"
#include "inspect_signals.h"

#define INSPECT_JSON_SCHEMA	1

/* NUL-separated strings (a saved command line) as an array. */
static void json_strings(struct json_out *j, const char *key,
			 const char *p, uint32_t size)
{
	const char *end = p + size;

	json_open(j, key, '[');
	for (; size && p < end; p += strlen(p) + 1)
		json_str(j, NULL, p);
	json_close(j, ']');
}

static void json_header(struct json_out *j, const struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;
	char program[CKPT_PROGRAM_MAX + 1], id[sizeof(h->unique_id) + 1];
	char round_host[sizeof(h->round_host) + 1];

	snprintf(program, sizeof(program), "%.*s", CKPT_PROGRAM_MAX,
		 h->program);
	snprintf(id, sizeof(id), "%.*s", (int)sizeof(h->unique_id),
		 h->unique_id);
	snprintf(round_host, sizeof(round_host), "%.*s",
		 (int)sizeof(h->round_host), h->round_host);
	json_open(j, "header", '{');
	json_u64(j, "version", h->version);
	json_str(j, "arch", arch_name(h->arch));
	json_u64(j, "page_size", h->page_size);
	json_u64(j, "image_size", h->image_size);
	json_str(j, "program", program);
	json_i64(j, "vpid", h->vpid);
	json_i64(j, "vppid", h->vppid);
	json_strings(j, "cmdline", image_string(img, h->cmdline),
		     h->cmdline_size);
	json_u64(j, "environment_size", h->environment_size);
	json_str(j, "unique_id", id);
	json_u64(j, "generation", h->generation);
	json_u64(j, "time_ns", h->ckpt_time_ns);
	json_hex(j, "computation_id", h->computation_id);
	json_u64(j, "round_members", h->round_members);
	json_str(j, "round_host", round_host);
	json_hex(j, "cpu_features", h->cpu_features);
	json_hex(j, "cpu_features_in_use", h->cpu_features_in_use);
	json_bool(j, "session_leader", h->flags & CKPT_IMG_F_SESSION_LEADER);
	json_bool(j, "controlling_terminal", h->flags & CKPT_IMG_F_CTTY);
	json_bool(j, "mappable", h->flags & CKPT_IMG_F_MAPPABLE);
	json_bool(j, "launched", h->flags & CKPT_IMG_F_LAUNCHED);
	if (h->flags & CKPT_IMG_F_HAS_BRK) {
		json_hex(j, "brk_start", h->brk_start);
		json_hex(j, "brk_end", h->brk_end);
	}
	json_u64(j, "meta_offset", h->meta_offset);
	json_u64(j, "meta_size", h->meta_size);
	json_u64(j, "data_offset", h->data_offset);
	json_close(j, '}');
}

static void json_region(struct json_out *j, const struct ckpt_image *img,
			const struct ckpt_region *r)
{
	char prot[4] = {
		r->prot & PROT_READ ? 'r' : '-',
		r->prot & PROT_WRITE ? 'w' : '-',
		r->prot & PROT_EXEC ? 'x' : '-', 0 };
	const char *encoding;
	uint64_t stored = region_stored_bytes(img, r, &encoding);

	json_open(j, NULL, '{');
	json_hex(j, "start", r->start);
	json_hex(j, "end", r->end);
	json_str(j, "prot", prot);
	json_str(j, "kind", region_kind_name(r->kind));
	json_bool(j, "growsdown", r->flags & CKPT_REGION_F_GROWSDOWN);
	json_bool(j, "noreserve", r->flags & CKPT_REGION_F_NORESERVE);
	json_u64(j, "saved_bytes", region_saved_bytes(img, r));
	json_u64(j, "stored_bytes", stored);
	json_str(j, "encoding", encoding);
	json_u64(j, "extents", r->nextents);
	json_str(j, "name", image_string(img, r->name));
	if (region_is_file(r)) {
		json_u64(j, "file_offset", r->file_offset);
		json_u64(j, "file_size", r->file_size);
		json_u64(j, "file_ino", r->file_ino);
	}
	json_close(j, '}');
}

static void json_frame(struct json_out *j, const struct frame *fr)
{
	json_open(j, NULL, '{');
	json_hex(j, "pc", fr->pc);
	json_str(j, "function", fr->function);
	if (fr->function)
		json_hex(j, "offset", fr->offset);
	json_str(j, "object", fr->object);
	if (fr->object_vaddr)
		json_hex(j, "object_address", fr->object_vaddr);
	json_str(j, "source_file", fr->source_file);
	if (fr->source_file)
		json_i64(j, "source_line", fr->source_line);
	json_close(j, '}');
}

static void json_backtrace(struct json_out *j, const struct backtrace *bt)
{
	char text[BACKTRACE_MAX_FRAMES * 64];

	json_str(j, "registers", bt->registers);
	json_open(j, "backtrace", '[');
	for (int k = 0; k < bt->nframes; k++)
		json_frame(j, &bt->frames[k]);
	json_close(j, ']');
	backtrace_text(bt, text, sizeof(text));
	json_str(j, "backtrace_text", text);
	json_str(j, "unwinding_stopped", bt->stop[0] ? bt->stop : NULL);
}

static void json_threads(struct json_out *j, struct ckpt_image *img,
			 int backtraces)
{
	struct inspect_unwinder *u = backtraces ? inspect_unwinder_new(img) :
						  NULL;
	struct backtrace bt;

	json_open(j, "threads", '[');
	for (uint32_t i = 0; i < img->hdr.nthreads; i++) {
		const struct ckpt_thread_info *t = &img->threads[i];

		json_open(j, NULL, '{');
		json_i64(j, "vtid", t->vtid);
		json_bool(j, "main", t->is_main);
		json_bool(j, "manager", t->vtid == img->hdr.manager_vtid);
		json_str(j, "name", image_thread_name(img, i));
		json_hex(j, "tls", t->tls);
		json_hex(j, "sp", t->sp);
		json_hex(j, "pc", t->pc);
		if (u) {
			inspect_backtrace(u, i, &bt);
			json_backtrace(j, &bt);
		}
		json_thread_signals(j, img, i);
		json_close(j, '}');
	}
	json_close(j, ']');
	inspect_unwinder_free(u);
}

static void json_socket(struct json_out *j, const struct ckpt_image *img,
			const struct ckpt_fd_info *f)
{
	struct ckpt_socket_info si;
	char text[160];

	if (image_socket_info(img, f, &si) < 0 ||
	    si.addr_len > sizeof(si.addr) || si.peer_len > sizeof(si.peer))
		return;
	ckpt_sockaddr_text(si.addr, si.addr_len, text, sizeof(text));
	json_str(j, "address", text);
	ckpt_sockaddr_text(si.peer, si.peer_len, text, sizeof(text));
	json_str(j, "peer", text);
	if (f->kind == CKPT_FD_SOCKET_LISTEN)
		json_i64(j, "backlog", si.backlog);
}

static void json_fd(struct json_out *j, const struct ckpt_image *img,
		    const struct ckpt_fd_info *f)
{
	json_open(j, NULL, '{');
	json_i64(j, "fd", f->fd);
	json_str(j, "kind", fd_kind_name(f->kind));
	json_u64(j, "flags", f->flags);
	json_bool(j, "cloexec", f->fd_flags & 1);
	json_i64(j, "offset", f->offset);
	json_str(j, "path", image_string(img, f->path));
	/* the union: pipe size, peer inode, pty number, event count or
	 * sharing, by kind (include/ckpt/image.h) */
	json_u64(j, "info", f->pipe_size);
	json_u64(j, "data_size", f->data_size);
	if (f->data_size)
		json_hex(j, "data_hash", f->data_hash);
	json_bool(j, "in_flight", f->fd_flags & CKPT_FDF_IN_FLIGHT);
	/* a Unix one's union word is its peer; its listener is the one
	 * its client connected to */
	if ((f->fd_flags & CKPT_FDF_IN_BACKLOG) &&
	    f->kind != CKPT_FD_UNIX_STREAM)
		json_u64(j, "backlog_of", f->backlog_of);
	if (f->kind >= CKPT_FD_SOCKET_LISTEN &&
	    f->kind <= CKPT_FD_SOCKET_OUTSIDE)
		json_socket(j, img, f);
	json_close(j, '}');
}

static void json_file(struct json_out *j, const struct ckpt_image *img,
		      const struct ckpt_file_record *f)
{
	json_open(j, NULL, '{');
	json_str(j, "path", image_string(img, f->path));
	json_bool(j, "written", f->flags & CKPT_FILE_F_WRITTEN);
	json_bool(j, "mapped_shared", f->flags & CKPT_FILE_F_MAPPED_SHARED);
	json_bool(j, "temporary", f->flags & CKPT_FILE_F_TEMPORARY);
	json_bool(j, "save_files", f->flags & CKPT_FILE_F_SAVE_FILES);
	json_u64(j, "size", f->size);
	json_u64(j, "mode", f->mode);
	json_u64(j, "mtime_ns", f->mtime_ns);
	json_str(j, "content", f->flags & CKPT_FILE_F_CONTENT ? "here" :
		 f->flags & CKPT_FILE_F_SAVED ? "another image" :
		 f->flags & CKPT_FILE_F_TOO_LARGE ? "too large" : NULL);
	json_close(j, '}');
}

static void json_unrestored(struct json_out *j, const struct ckpt_image *img)
{
	const char *line = image_string(img, img->hdr.unrestored), *end;
	char one[1024];

	json_open(j, "unrestored", '[');
	for (; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		if (end == line)
			continue;
		snprintf(one, sizeof(one), "%.*s", (int)(end - line), line);
		json_str(j, NULL, one);
	}
	json_close(j, ']');
}

/* Whether this machine could restart it, and would without
 * --trust-image. */
static void json_restart_here(struct json_out *j, struct ckpt_image *img)
{
	char why[1024];
	int host = image_check_host(img, 0);

	if (!host)
		host = image_check_vdso(img);
	json_open(j, "restart_here", '{');
	json_bool(j, "possible", !host);
	json_str(j, "reason", host ? img->err : NULL);
	json_bool(j, "needs_trust_image",
		  image_trust_check(img->fd, why, sizeof(why)) == -EPERM);
	json_close(j, '}');
}

void inspect_print_json(struct ckpt_image *img,
			const struct inspect_options *opts, int verified)
{
	struct json_out j = { stdout, 0 };

	json_open(&j, NULL, '{');
	json_str(&j, "tool", "ckpt_inspect");
	json_u64(&j, "schema", INSPECT_JSON_SCHEMA);
	json_str(&j, "image", img->path);
	json_key(&j, "verified");
	fputs(!opts->verify ? "null" : verified ? "true" : "false", stdout);
	json_header(&j, img);
	json_open(&j, "regions", '[');
	for (uint32_t i = 0; i < img->hdr.nregions; i++)
		json_region(&j, img, &img->regions[i]);
	json_close(&j, ']');
	json_threads(&j, img, opts->backtraces);
	json_signal_state(&j, img);
	json_open(&j, "fds", '[');
	for (uint32_t i = 0; i < img->hdr.nfds; i++)
		json_fd(&j, img, &img->fds[i]);
	json_close(&j, ']');
	json_open(&j, "files", '[');
	for (uint32_t i = 0; i < img->hdr.nfiles; i++)
		json_file(&j, img, &img->files[i]);
	json_close(&j, ']');
	json_unrestored(&j, img);
	if (verified)
		json_restart_here(&j, img);
	json_close(&j, '}');
	putchar('\n');
}
