// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_inspect IMAGE...: decode checkpoint images (header, regions,
 * extents, threads and where each was, signal state, fds, files) and
 * verify every checksum; --json for scripts (inspect_json.c,
 * docs/ckpt_inspect.md). Exit 1 if an image is corrupt; whether this
 * machine could restart it is only reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/sockaddr_text.h"
#include "ckpt/socket_options.h"
#include "image_check.h"
#include "image_trust.h"
#include "inspect_backtrace.h"
#include "inspect_json.h"
#include "inspect_signals.h"
#include "inspect_tree.h"

/* The saved command line, its strings joined by spaces (validated:
 * NUL-terminated inside the string table). */
static void print_command_line(const struct ckpt_image *img)
{
	const char *p = img->strings + img->hdr.cmdline;
	const char *end = p + img->hdr.cmdline_size;

	if (!img->hdr.cmdline_size) {
		printf("cmdline     (not saved)\n");
		return;
	}
	printf("cmdline    ");
	for (; p < end; p += strlen(p) + 1)
		printf(" %s", p);
	printf(" (environment %u bytes)\n", img->hdr.environment_size);
}

static void print_header(const struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;
	time_t secs = h->ckpt_time_ns / 1000000000ULL;
	char when[64] = "?";
	struct tm tm;

	if (localtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %z", &tm);
	printf("image       %s\n", img->path);
	printf("version     %u, %s, page size %u, %llu bytes\n", h->version,
	       arch_name(h->arch), h->page_size,
	       (unsigned long long)h->image_size);
	printf("program     %.*s (vpid %d, vppid %d)\n", CKPT_PROGRAM_MAX,
	       h->program, h->vpid, h->vppid);
	print_command_line(img);
	printf("unique id   %.*s\n", (int)sizeof(h->unique_id), h->unique_id);
	printf("generation  %llu, taken %s\n",
	       (unsigned long long)h->generation, when);
	if (h->computation_id)
		printf("computation %016llx\n",
		       (unsigned long long)h->computation_id);
	if (h->round_members)
		printf("host        %.*s, one of the checkpoint's %u processes "
		       "there\n", (int)sizeof(h->round_host), h->round_host,
		       h->round_members);
	printf("cpu         features %#llx, ", (unsigned long long)h->cpu_features);
	if (h->cpu_features_in_use)
		printf("in use %#llx\n",
		       (unsigned long long)h->cpu_features_in_use);
	else
		printf("in use unknown (older image)\n");
	printf("restore     entry %#llx, stack top %#llx, tls %#llx\n",
	       (unsigned long long)h->restore_entry,
	       (unsigned long long)h->restore_stack_top,
	       (unsigned long long)h->restore_tls);
	if (h->flags & (CKPT_IMG_F_SESSION_LEADER | CKPT_IMG_F_CTTY))
		printf("session     %s%s\n",
		       h->flags & CKPT_IMG_F_SESSION_LEADER ? "leader" :
							     "member",
		       h->flags & CKPT_IMG_F_CTTY ?
		       ", with a controlling terminal" : "");
	if (h->flags & CKPT_IMG_F_LAUNCHED)
		printf("launched    the process ckpt_launch started: "
		       "ckpt_restart waits for it\n");
	printf("restart     memory %s\n", h->flags & CKPT_IMG_F_MAPPABLE ?
	       "may be mapped from the image" : "is copied (older libckpt)");
	if (h->flags & CKPT_IMG_F_HAS_BRK)
		printf("brk         %#llx-%#llx\n",
		       (unsigned long long)h->brk_start,
		       (unsigned long long)h->brk_end);
	printf("metadata    %llu bytes at %llu; data from %llu\n",
	       (unsigned long long)h->meta_size,
	       (unsigned long long)h->meta_offset,
	       (unsigned long long)h->data_offset);
}

static void prot_string(uint32_t prot, char out[4])
{
	out[0] = prot & PROT_READ ? 'r' : '-';
	out[1] = prot & PROT_WRITE ? 'w' : '-';
	out[2] = prot & PROT_EXEC ? 'x' : '-';
	out[3] = '\0';
}

static void print_storage(const struct ckpt_image *img, uint64_t saved,
			  uint64_t stored)
{
	uint32_t nzstd = 0;

	for (uint32_t i = 0; i < img->hdr.nextents; i++)
		nzstd += img->extents[i].encoding == CKPT_EXTENT_ZSTD;
	printf("stored in %llu bytes (ratio %.2fx): %u extents raw, %u "
	       "zstd-compressed\n", (unsigned long long)stored,
	       stored ? (double)saved / (double)stored : 1.0,
	       img->hdr.nextents - nzstd, nzstd);
}

static void print_regions(const struct ckpt_image *img)
{
	uint64_t total = 0, total_stored = 0, saved, stored;
	const char *encoding;
	char prot[4];
	uint32_t i;

	printf("\n%u regions:\n", img->hdr.nregions);
	printf("  %-33s %-4s %-15s %5s %12s %12s %-5s  %s\n", "address",
	       "prot", "kind", "flags", "saved", "stored", "enc", "name");
	for (i = 0; i < img->hdr.nregions; i++) {
		const struct ckpt_region *r = &img->regions[i];

		prot_string(r->prot, prot);
		saved = region_saved_bytes(img, r);
		stored = region_stored_bytes(img, r, &encoding);
		total += saved;
		total_stored += stored;
		printf("  %016llx-%016llx %-4s %-15s %c%c    %12llu %12llu "
		       "%-5s  %s",
		       (unsigned long long)r->start,
		       (unsigned long long)r->end, prot,
		       region_kind_name(r->kind),
		       r->flags & CKPT_REGION_F_GROWSDOWN ? 'g' : '-',
		       r->flags & CKPT_REGION_F_NORESERVE ? 'n' : '-',
		       (unsigned long long)saved, (unsigned long long)stored,
		       encoding, image_string(img, r->name));
		if (region_is_file(r))
			printf(" @%llu (size %llu, ino %llu)",
			       (unsigned long long)r->file_offset,
			       (unsigned long long)r->file_size,
			       (unsigned long long)r->file_ino);
		printf("\n");
	}
	printf("\n%u extents, %llu bytes of memory saved\n", img->hdr.nextents,
	       (unsigned long long)total);
	print_storage(img, total, total_stored);
	if (image_vdso_code_size(img))
		printf("vdso code saved (%llu bytes): restartable on a kernel "
		       "with another vdso\n",
		       (unsigned long long)image_vdso_code_size(img));
	else
		printf("no vdso code saved: restartable only on a kernel with "
		       "the same vdso layout\n");
}

/* An incremental image: its place in its chain, and the memory each of
 * its links holds for it. */
static void print_chain(const struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;
	uint64_t bytes[CKPT_LINKS_MAX + 1] = { 0 };
	uint32_t count[CKPT_LINKS_MAX + 1] = { 0 };

	if (!(h->flags & CKPT_IMG_F_CHAIN))
		return;
	for (uint32_t i = 0; i < h->nextents; i++) {
		const struct ckpt_extent *e = &img->extents[i];

		if (e->source <= h->nlinks) {
			bytes[e->source] += e->len;
			count[e->source]++;
		}
	}
	printf("\nchain: image %u of its chain, %s; %llu bytes of page "
	       "hashes\n", h->chain_length, h->nlinks ? "a delta" :
	       "a full image", (unsigned long long)h->page_hashes_size);
	printf("  this image                 %8u extents %14llu bytes\n",
	       count[0], (unsigned long long)bytes[0]);
	for (uint32_t i = 0; i < h->nlinks; i++)
		printf("  link %-2u generation %-6llu %8u extents %14llu bytes "
		       "in %s\n", i + 1,
		       (unsigned long long)img->links[i].generation,
		       count[i + 1], (unsigned long long)bytes[i + 1],
		       image_string(img, img->links[i].name));
}

/* "thread 4243 (worker-2): pthread_cond_wait <- queue_pop <- ..." */
static void print_backtrace(const struct ckpt_image *img, uint32_t i,
			    const struct backtrace *bt)
{
	const struct ckpt_thread_info *t = &img->threads[i];
	char text[BACKTRACE_MAX_FRAMES * 64];

	printf("    thread %d (%s%s%s):", t->vtid,
	       t->vtid == img->hdr.manager_vtid ? "ckpt manager, " : "",
	       image_thread_name(img, i)[0] ? image_thread_name(img, i) :
	       "unnamed", bt->registers[0] == 'p' ? ", pc and sp only" : "");
	backtrace_text(bt, text, sizeof(text));
	printf(" %s", text);
	if (bt->stop[0])
		printf(" (unwinding stopped: %s)", bt->stop);
	printf("\n");
}

static void print_threads(struct ckpt_image *img, int backtraces)
{
	struct inspect_unwinder *u = backtraces ? inspect_unwinder_new(img) :
						  NULL;
	struct backtrace bt;
	uint32_t i;

	printf("\n%u threads:\n", img->hdr.nthreads);
	for (i = 0; i < img->hdr.nthreads; i++) {
		const struct ckpt_thread_info *t = &img->threads[i];

		printf("  vtid %-7d %-4s tls %#llx sp %#llx pc %#llx\n", t->vtid,
		       t->is_main ? "main" : "", (unsigned long long)t->tls,
		       (unsigned long long)t->sp, (unsigned long long)t->pc);
		if (u) {
			inspect_backtrace(u, i, &bt);
			print_backtrace(img, i, &bt);
		}
		print_thread_signals(img, i);
	}
	inspect_unwinder_free(u);
}

/* The options saved (those read at checkpoint), on a line of their
 * own: "options SO_RCVBUF 8192 TCP_NODELAY 1 SO_LINGER 1,7 ...". */
static void print_socket_options(const struct ckpt_image *img,
				 const struct ckpt_fd_info *f)
{
	struct ckpt_socket_info info;
	const struct ckpt_socket_info *si = &info;
	static const struct { int a, b; const char *text; } pairs[] = {
		{ CKPT_SOCK_OPT_LINGER_ON, CKPT_SOCK_OPT_LINGER_SECS,
		  "SO_LINGER" },
		{ CKPT_SOCK_OPT_RCVTIMEO_SEC, CKPT_SOCK_OPT_RCVTIMEO_USEC,
		  "SO_RCVTIMEO" },
		{ CKPT_SOCK_OPT_SNDTIMEO_SEC, CKPT_SOCK_OPT_SNDTIMEO_USEC,
		  "SO_SNDTIMEO" },
	};

	if (image_socket_info(img, f, &info) < 0)
		return;
	printf("\n       options SO_RCVBUF %d SO_SNDBUF %d", si->rcvbuf,
	       si->sndbuf);
	for (unsigned i = 0; i < CKPT_NINT_OPTIONS; i++)
		if (si->opt[ckpt_int_options[i].slot] != CKPT_SOCK_OPT_UNSET)
			printf(" %s %d", ckpt_int_options[i].text,
			       si->opt[ckpt_int_options[i].slot]);
	for (unsigned i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (si->opt[pairs[i].a] != CKPT_SOCK_OPT_UNSET)
			printf(" %s %d,%d", pairs[i].text, si->opt[pairs[i].a],
			       si->opt[pairs[i].b]);
}

/* Whether ckpt_fd_info's union holds `share` for this kind (libckpt
 * fills it for files, directories and devices; pipes, FIFOs, Unix pairs,
 * pseudo-terminal masters and sockets hold other things there). */
static int has_share_field(uint32_t kind)
{
	return kind != CKPT_FD_PIPE && kind != CKPT_FD_FIFO &&
	       kind != CKPT_FD_UNIX_STREAM && kind != CKPT_FD_UNIX_DGRAM &&
	       kind != CKPT_FD_UNIX_SEQPACKET && kind != CKPT_FD_PTY_MASTER &&
	       !(kind >= CKPT_FD_SOCKET_LISTEN &&
		 kind <= CKPT_FD_SOCKET_OUTSIDE);
}

/* A socket record's saved address, options and backlog in words. */
/* A saved Unix message queue (CKPT_FD_UNIX_DGRAM, _SEQPACKET, a stream
 * with CKPT_FDF_MESSAGES): its names, options and message count. */
static void print_unix_queue(const struct ckpt_image *img,
			     const struct ckpt_fd_info *f)
{
	struct ckpt_unix_queue q;
	char here[160], peer[160];

	if (f->data_size < sizeof(q) ||
	    pread(img->fd, &q, sizeof(q), f->data_offset) != sizeof(q) ||
	    q.addr_len > sizeof(q.addr) || q.peer_len > sizeof(q.peer))
		return;
	ckpt_sockaddr_text(q.addr, q.addr_len, here, sizeof(here));
	ckpt_sockaddr_text(q.peer, q.peer_len, peer, sizeof(peer));
	printf(" (%s%s%s, %u message%s queued%s)", here[0] ? here : "unnamed",
	       peer[0] ? " to " : "", peer, q.nmsgs, q.nmsgs == 1 ? "" : "s",
	       q.flags & CKPT_UNIXQ_F_PASSCRED ? ", SO_PASSCRED" : "");
}

static void print_socket_info(const struct ckpt_image *img,
			      const struct ckpt_fd_info *f)
{
	struct ckpt_socket_info si;
	char here[160], peer[160];

	if (image_socket_info(img, f, &si) < 0 ||
	    si.addr_len > sizeof(si.addr) || si.peer_len > sizeof(si.peer))
		return;
	ckpt_sockaddr_text(si.addr, si.addr_len, here, sizeof(here));
	ckpt_sockaddr_text(si.peer, si.peer_len, peer, sizeof(peer));
	printf(" (%s%s%s", here[0] ? here : "unnamed", peer[0] ? " to " : "",
	       peer);
	if (f->kind == CKPT_FD_SOCKET_LISTEN)
		printf(", backlog %d", si.backlog);
	printf("%s%s%s", si.flags & CKPT_SOCK_F_REUSEADDR ?
	       ", SO_REUSEADDR" : "", si.flags & CKPT_SOCK_F_REUSEPORT ?
	       ", SO_REUSEPORT" : "", si.flags & CKPT_SOCK_F_V6ONLY ?
	       ", IPV6_V6ONLY" : "");
	if (si.flags & (CKPT_SOCK_F_QUEUE_SAVED | CKPT_SOCK_F_QUEUE))
		printf(", %llu bytes queued saved",
		       (unsigned long long)(f->data_size -
					    ckpt_socket_info_size(&si)));
	if ((si.flags & CKPT_SOCK_F_DGRAMS) && si.ndgrams)
		printf(", %u datagrams saved", si.ndgrams);
	if (si.ngroups)
		printf(", %u multicast groups", si.ngroups);
	printf(")");
}

static void print_fds(const struct ckpt_image *img)
{
	const char *kind;
	uint32_t i;

	printf("\n%u fds:\n", img->hdr.nfds);
	for (i = 0; i < img->hdr.nfds; i++) {
		const struct ckpt_fd_info *f = &img->fds[i];

		kind = fd_kind_name(f->kind);
		printf("  %4d %-14s flags %#o%s offset %lld %s", f->fd,
		       kind ? kind : "?", f->flags,
		       f->fd_flags & 1 ? " cloexec" : "",
		       (long long)f->offset, image_string(img, f->path));
		if (f->kind >= CKPT_FD_SOCKET_LISTEN &&
		    f->kind <= CKPT_FD_SOCKET_OUTSIDE)
			print_socket_info(img, f);
		else if (f->kind == CKPT_FD_FILE_DELETED || f->data_size ||
			 (f->fd_flags & CKPT_FDF_CONTENT_SAVED))
			printf(" (%llu bytes saved)",
			       (unsigned long long)f->data_size);
		if (f->kind == CKPT_FD_PIPE || f->kind == CKPT_FD_FIFO)
			printf(" (size %u)", f->pipe_size);
		else if (f->kind == CKPT_FD_UNIX_STREAM ||
			 f->kind == CKPT_FD_UNIX_DGRAM ||
			 f->kind == CKPT_FD_UNIX_SEQPACKET)
			printf(" (peer socket:[%u])", f->peer_ino);
		else if (f->kind == CKPT_FD_PTY_MASTER)
			printf(" (master of /dev/pts/%u)", f->pty_index);
		if (f->kind == CKPT_FD_UNIX_DGRAM ||
		    f->kind == CKPT_FD_UNIX_SEQPACKET ||
		    (f->fd_flags & CKPT_FDF_MESSAGES))
			print_unix_queue(img, f);
		else if (f->kind == CKPT_FD_EVENTFD)
			printf("%s", f->event_info ? " (semaphore)" : "");
		else if (f->kind == CKPT_FD_TIMERFD)
			printf(" (clock %u)", f->event_info);
		else if (f->kind == CKPT_FD_SIGNALFD)
			printf(" (mask %#llx)", (unsigned long long)f->offset);
		else if (f->kind == CKPT_FD_EPOLL)
			printf(" (%u target%s)", f->event_info,
			       f->event_info == 1 ? "" : "s");
		else if (f->kind == CKPT_FD_PIDFD && f->event_info)
			printf(" (of an ended process)");
		else if (f->kind == CKPT_FD_PIDFD)
			printf(" (of process %lld)", (long long)f->offset);
		else if (f->kind == CKPT_FD_INOTIFY)
			printf(" (%u watch%s)", f->event_info,
			       f->event_info == 1 ? "" : "es");
		else if (!has_share_field(f->kind))
			;	/* the union holds pipe_size, peer_ino ... */
		else if (f->kind == CKPT_FD_FILE_DELETED &&
			 (f->share & CKPT_FD_SHARE_GROUP))
			printf(" (inode %u, low 31 bits)",
			       f->share & ~CKPT_FD_SHARE_GROUP);
		else if (f->share & CKPT_FD_SHARE_GROUP)
			printf(" (shared description %u)",
			       f->share & ~CKPT_FD_SHARE_GROUP);
		else if (f->share)
			printf(" (shared with the parent's fd %u)",
			       f->share - 1);
		if (f->fd_flags & CKPT_FDF_SHARED_EVENT)
			printf(" (shared description %llu)",
			       (unsigned long long)(f->data_hash &
						    ~CKPT_FD_SHARE_GROUP));
		if (f->fd_flags & CKPT_FDF_IN_FLIGHT)
			printf(" (in flight: carried by a queued message)");
		if ((f->fd_flags & CKPT_FDF_IN_BACKLOG) &&
		    f->kind == CKPT_FD_UNIX_STREAM)
			printf(" (waiting to be accepted)");
		else if (f->fd_flags & CKPT_FDF_IN_BACKLOG)
			printf(" (waiting to be accepted by fd %u)",
			       f->backlog_of);
		if (f->data_size)
			printf(", hash %016llx",
			       (unsigned long long)f->data_hash);
		if (f->kind >= CKPT_FD_SOCKET_LISTEN &&
		    f->kind <= CKPT_FD_SOCKET_OUTSIDE)
			print_socket_options(img, f);
		printf("\n");
	}
}

/* What the checkpoint said a restart will not restore, one line each. */
static void print_unrestored(const struct ckpt_image *img)
{
	const char *line = image_string(img, img->hdr.unrestored), *end;

	if (!*line)
		return;
	printf("\nnot restored by a restart:\n");
	for (; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		if (end > line)
			printf("  %.*s\n", (int)(end - line), line);
	}
}

static void print_file_flags(uint32_t flags)
{
	static const struct {
		uint32_t flag;
		const char *name;
	} names[] = {
		{ CKPT_FILE_F_WRITTEN, "written" },
		{ CKPT_FILE_F_MAPPED_SHARED, "mapped-shared" },
		{ CKPT_FILE_F_TEMPORARY, "temporary" },
		{ CKPT_FILE_F_SAVE_FILES, "save-files" },
	};
	const char *sep = "";

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & names[i].flag) {
			printf("%s%s", sep, names[i].name);
			sep = ",";
		}
}

static void print_files(const struct ckpt_image *img)
{
	printf("\n%u files:\n", img->hdr.nfiles);
	for (uint32_t i = 0; i < img->hdr.nfiles; i++) {
		const struct ckpt_file_record *f = &img->files[i];
		time_t sec = f->mtime_ns / 1000000000ULL;
		char when[32] = "?";
		struct tm tm;

		if (gmtime_r(&sec, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		printf("  %s: ", image_string(img, f->path));
		print_file_flags(f->flags);
		printf(", %llu bytes, mode %04o, modified %s.%09llu UTC",
		       (unsigned long long)f->size, f->mode, when,
		       (unsigned long long)(f->mtime_ns % 1000000000ULL));
		if (f->flags & CKPT_FILE_F_CONTENT)
			printf(", content saved here (offset %llu, hash "
			       "%016llx)", (unsigned long long)f->data_offset,
			       (unsigned long long)f->data_hash);
		else if (f->flags & CKPT_FILE_F_SAVED)
			printf(", content saved in another image");
		else if (f->flags & CKPT_FILE_F_TOO_LARGE)
			printf(", content NOT saved (over the temporary-file "
			       "limit)");
		printf("\n");
	}
}

/* Whether this machine could restart it, as notes: images from elsewhere
 * are still inspected. */
static void print_host_notes(struct ckpt_image *img)
{
	char said[sizeof(img->err)] = "";

	if (image_check_host(img, 0)) {
		printf("note: this machine cannot restart it: %s\n", img->err);
		snprintf(said, sizeof(said), "%s", img->err);
		if (!image_check_host(img, IMAGE_CPU_COMPAT))
			printf("note: ckpt_restart --cpu-compat can: no saved "
			       "thread holds the missing register state\n");
	}
	/* The vdso on its own: the CPU may have hidden it above. */
	if (image_check_vdso(img)) {
		if (strcmp(img->err, said))
			printf("note: this machine cannot restart it: %s\n",
			       img->err);
		return;
	}
	if (img->vdso_redirect)
		printf("note: this kernel's vdso differs from the "
		       "checkpointing kernel's: a restart will redirect the "
		       "old vdso entry points to this kernel's vdso\n");
}

/* Reading an image is not running it: another user's image is inspected,
 * with a note that ckpt_restart would refuse it. */
static void print_trust_note(const struct ckpt_image *img)
{
	char why[1024];

	if (image_trust_check(img->fd, why, sizeof(why)) == -EPERM)
		printf("note: ckpt_restart refuses to run it without "
		       "--trust-image: it is %s\n", why);
}

/* What to show; the defaults are those of the fuzzer's inspect(). */
static struct inspect_options options = { .verify = 1, .backtraces = 1 };

static void print_text(struct ckpt_image *img)
{
	print_header(img);
	print_regions(img);
	print_chain(img);
	print_threads(img, options.backtraces);
	print_signal_state(img);
	print_fds(img);
	print_files(img);
	print_unrestored(img);
}

/* Decode and verify path; on failure img->err says why. The image is
 * closed either way (tests/fuzz/fuzz_image.c calls it in a loop). */
static int inspect(struct ckpt_image *img, const char *path)
{
	int err = image_open(img, path, O_CLOEXEC);

	if (!err && options.json) {
		err = options.verify ? image_verify_data(img) : 0;
		inspect_print_json(img, &options, err == 0);
	} else if (!err) {
		print_text(img);
		fflush(stdout);
		if (options.verify)
			err = image_verify_data(img);
		if (!err && options.verify)
			printf("\nall checksums verified\n");
		else if (!err)
			printf("\nchecksums of the memory data not verified "
			       "(--no-verify)\n");
	}
	if (!err && !options.json) {
		print_host_notes(img);
		print_trust_note(img);
	}
	image_close(img);
	return err;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: ckpt_inspect [OPTIONS] IMAGE...\n"
"Decode checkpoint images: header, memory regions, threads with a\n"
"backtrace of each (where it was at the checkpoint), signal state,\n"
"file descriptors, files, what a restart will not restore; verify\n"
"every checksum.\n"
"\n"
"  --json              one JSON object per image on stdout, one per line\n"
"                      (docs/ckpt_inspect.md)\n"
"  --no-verify         do not read the memory data to verify its\n"
"                      checksums: read only the metadata and the pages\n"
"                      the backtraces need (fast on large images)\n"
"  --no-backtraces     do not unwind the threads' stacks\n"
"  --help, --version\n"
"\n"
"Exit status: 0, or 1 if an image is corrupt or cannot be read (the\n"
"others are still shown) or on bad usage.\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "no-verify", no_argument, NULL, 'n' },
		{ "no-backtraces", no_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j': options.json = 1; break;
		case 'n': options.verify = 0; break;
		case 'b': options.backtraces = 0; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("ckpt_inspect %s\n", CKPT_VERSION); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind == argc) {
		fprintf(stderr, "ckpt_inspect: no image given\n");
		usage(stderr);
		return -1;
	}
	return optind;
}

int main(int argc, char **argv)
{
	struct ckpt_image img;
	struct inspect_tree tree = { 0 };
	int first = parse_args(argc, argv), status = 0;

	if (first < 0)
		return 1;
	for (int i = first; i < argc; i++) {
		if (!options.json && i > first)
			printf("\n");
		if (inspect(&img, argv[i])) {
			fflush(stdout);
			fprintf(stderr, "ckpt_inspect: %s: %s\n", argv[i],
				img.err);
			status = 1;
		} else if (!options.json && inspect_tree_add(&tree, &img)) {
			fprintf(stderr, "ckpt_inspect: %s: no memory for the "
				"process tree\n", argv[i]);
			status = 1;
		}
	}
	inspect_tree_print(&tree);
	return status;
}
