// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Open files that several restored processes shared (one open file
 * description, one offset: inherited across fork, passed over a Unix
 * socket). libckpt records, at the checkpoint, the group of processes
 * sharing each description (ckpt_fd_info.share = CKPT_FD_SHARE_GROUP |
 * n, libckpt-preload/shared_files.c; older images: 1 + the parent's fd
 * of the same number, followed up the tree: parent, child, grandchild);
 * each group is opened once by ckpt_restart at the saved offset and
 * handed to every member through the restart plan.
 * Files deleted while open keep their per-process restore (not shared).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include "process_tree.h"

struct fd_ref {
	int img;
	int rec;			/* index in the image's fd table */
};

struct group {
	struct fd_ref leader;
	int handed_fd;
};

static int shareable(uint32_t kind)
{
	return kind == CKPT_FD_FILE || kind == CKPT_FD_DIR ||
	       kind == CKPT_FD_DEVICE;
}

/* An eventfd, timerfd or epoll record several processes share. */
static int shared_event(const struct ckpt_fd_info *f)
{
	return (f->kind == CKPT_FD_EVENTFD || f->kind == CKPT_FD_TIMERFD ||
		f->kind == CKPT_FD_EPOLL) &&
	       (f->fd_flags & CKPT_FDF_SHARED_EVENT) &&
	       (f->data_hash & CKPT_FD_SHARE_GROUP) &&
	       f->data_hash <= UINT32_MAX;
}

/* The share group of a record, 0 if it has none: a file's `share`, an
 * event fd's data_hash. */
static uint32_t share_group(const struct ckpt_fd_info *f)
{
	if (shared_event(f))
		return (uint32_t)f->data_hash;
	if (shareable(f->kind) && (f->share & CKPT_FD_SHARE_GROUP))
		return f->share;
	return 0;
}

/* An event fd made empty, of the record's kind: libckpt in the process
 * the plan names puts the saved state in (event_fds.c). */
static int make_event_fd(const struct ckpt_fd_info *f)
{
	int fd;

	if (f->kind == CKPT_FD_EVENTFD)
		fd = eventfd(0, f->event_info ? EFD_SEMAPHORE : 0);
	else if (f->kind == CKPT_FD_TIMERFD)
		fd = timerfd_create((int)f->event_info, 0);
	else
		fd = epoll_create1(0);
	return fd < 0 ? -errno : fd;
}

static int find_record(const struct ckpt_image *img, int fd, uint32_t kind)
{
	for (uint32_t j = 0; j < img->hdr.nfds; j++)
		if (img->fds[j].fd == fd && img->fds[j].kind == kind)
			return j;
	return -1;
}

/* The record in the parent image this one shares with, if any. */
static int parent_ref(struct ckpt_image *imgs, const int *parent,
		      struct fd_ref r, struct fd_ref *up)
{
	const struct ckpt_fd_info *f = &imgs[r.img].fds[r.rec];
	int p = parent[r.img], k;

	if (p < 0 || !shareable(f->kind) || f->share == 0 ||
	    (f->share & CKPT_FD_SHARE_GROUP))
		return 0;
	k = find_record(&imgs[p], (int)f->share - 1, f->kind);
	if (k < 0 || strcmp(image_string(&imgs[p], imgs[p].fds[k].path),
			    image_string(&imgs[r.img], f->path)))
		return 0;
	up->img = p;
	up->rec = k;
	return 1;
}

/* The topmost record of r's chain; the tree has no cycles. */
static struct fd_ref leader_of(struct ckpt_image *imgs, const int *parent,
			       struct fd_ref r)
{
	struct fd_ref up;

	while (parent_ref(imgs, parent, r, &up))
		r = up;
	return r;
}

static int open_description(const struct ckpt_image *img,
			    const struct ckpt_fd_info *f)
{
	const char *path = image_string(img, f->path);
	int fd;

	if (shared_event(f))
		return make_event_fd(f);
	if (f->kind == CKPT_FD_DIR)
		fd = open(path, O_RDONLY | O_DIRECTORY);
	else
		fd = open(path, CKPT_FD_REOPEN_FLAGS(f->flags));
	if (fd < 0)
		return -errno;
	if (f->kind != CKPT_FD_DEVICE && f->offset >= 0 &&
	    lseek(fd, f->offset, SEEK_SET) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* Move fd (closed) to exactly *next_fd, the top of the kept range, and
 * advance it: the number, or -1 (nothing left open). */
int place_handed(int fd, int *next_fd)
{
	int placed = fd == *next_fd ? fd : fcntl(fd, F_DUPFD, *next_fd);

	if (placed != fd)
		close(fd);
	if (placed != *next_fd) {
		if (placed >= 0)
			close(placed);
		return -1;
	}
	(*next_fd)++;
	return placed;
}

int plan_add_file(struct ckpt_restart_plan *plan, int vpid, int fd,
		  int handed)
{
	struct ckpt_plan_file *e;

	if (plan->nfiles == CKPT_PLAN_MAX_FILES)
		return -E2BIG;
	e = &plan->files[plan->nfiles++];
	e->vpid = vpid;
	e->fd = fd;
	e->handed_fd = handed;
	e->flags = 0;
	return 0;
}

/* The group led by `lead`, opened now if it is new; NULL on failure. */
static struct group *group_for(struct ckpt_image *imgs, struct fd_ref lead,
			       struct group *groups, int *ngroups,
			       struct ckpt_restart_plan *plan, int *next_fd)
{
	const struct ckpt_fd_info *f = &imgs[lead.img].fds[lead.rec];
	struct group *g;
	int fd, placed;

	for (int i = 0; i < *ngroups; i++)
		if (groups[i].leader.img == lead.img &&
		    groups[i].leader.rec == lead.rec)
			return &groups[i];
	if (*ngroups == CKPT_PLAN_MAX_FILES ||
	    plan->nfiles == CKPT_PLAN_MAX_FILES) {
		fprintf(stderr, "ckpt_restart: more than %d shared open files "
			"in the computation\n", CKPT_PLAN_MAX_FILES);
		return NULL;
	}
	fd = open_description(&imgs[lead.img], f);
	if (fd < 0 && shared_event(f)) {
		/* each process makes its own (files.c), as it can */
		fprintf(stderr, "ckpt_restart: warning: %s: fd %d (%s): making "
			"the description its processes share failed: %s; each "
			"gets its own copy\n", imgs[lead.img].path, f->fd,
			image_string(&imgs[lead.img], f->path), strerror(-fd));
		g = &groups[(*ngroups)++];
		g->leader = lead;
		g->handed_fd = -1;
		return g;
	}
	if (fd < 0) {
		fprintf(stderr, "ckpt_restart: %s: fd %d (%s): opening the file "
			"its children share failed: %s\n", imgs[lead.img].path,
			f->fd, image_string(&imgs[lead.img], f->path),
			strerror(-fd));
		return NULL;
	}
	placed = place_handed(fd, next_fd);
	if (placed < 0) {
		fprintf(stderr, "ckpt_restart: %s: fd %d: cannot place the "
			"shared file at fd %d\n", imgs[lead.img].path, f->fd,
			*next_fd);
		return NULL;
	}
	g = &groups[(*ngroups)++];
	g->leader = lead;
	g->handed_fd = placed;
	plan_add_file(plan, imgs[lead.img].hdr.vpid, f->fd, placed);
	if (shared_event(f))	/* this process puts the state in */
		plan->files[plan->nfiles - 1].flags = CKPT_PLAN_FILE_SETS_STATE;
	return g;
}

/* The first record of the images in share group `share`. */
static struct fd_ref group_leader(struct ckpt_image *imgs, int n,
				  uint32_t share)
{
	struct fd_ref r = { -1, -1 };

	for (int i = 0; i < n && r.img < 0; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds && r.img < 0; j++)
			if (share_group(&imgs[i].fds[j]) == share) {
				r.img = i;
				r.rec = j;
			}
	return r;
}

/* 1 and the record that leads r's group if r shares its description
 * with records of other images: a share group, or (older images) a
 * chain of parent_fd links up the tree. */
static int shared_lead(struct ckpt_image *imgs, int n, const int *parent,
		       struct fd_ref r, struct fd_ref *lead)
{
	uint32_t group = share_group(&imgs[r.img].fds[r.rec]);
	struct fd_ref up;

	if (group) {
		*lead = group_leader(imgs, n, group);
		return 1;
	}
	if (!parent_ref(imgs, parent, r, &up))
		return 0;
	*lead = leader_of(imgs, parent, r);
	return 1;
}

int restart_files_create(struct ckpt_image *imgs, int n, const int *parent,
			 struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	static struct group groups[CKPT_PLAN_MAX_FILES];
	int ngroups = 0;

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			struct fd_ref r = { i, (int)j }, lead;
			struct group *g;

			if (!shared_lead(imgs, n, parent, r, &lead))
				continue;
			g = group_for(imgs, lead, groups, &ngroups, plan,
				      keep_fd_end);
			if (!g)
				return -EINVAL;
			if (g->handed_fd < 0 ||
			    (lead.img == i && lead.rec == (int)j))
				continue;	/* none, or group_for listed it */
			if (plan_add_file(plan, imgs[i].hdr.vpid,
				      imgs[i].fds[j].fd, g->handed_fd) < 0) {
				fprintf(stderr, "ckpt_restart: more than %d "
					"shared open files in the "
					"computation\n", CKPT_PLAN_MAX_FILES);
				return -E2BIG;
			}
		}
	return 0;
}
