// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Map or copy: the image-wide half of the rule in docs/restart.md. A
 * mapped extent reads its pages from the image file for as long as the
 * process runs, so the file must not change under it: images on network
 * and user-space filesystems (NFS, SMB, FUSE, 9p, Ceph, ...) are copied,
 * since another machine or a daemon may rewrite them in place and their
 * page cache is not bound to the data. An image written by a libckpt
 * that does not know image-backed memory (no CKPT_IMG_F_MAPPABLE) is
 * copied too: its next checkpoint would save that memory by reference to
 * the image. The per-extent half is restart/loader/extent_map.c.
 */
#include <stdio.h>
#include <sys/vfs.h>
#include "memory_mode.h"

int restart_copy_memory;
int restart_stopped;

/* statfs f_type values (linux/magic.h and the filesystems' own). */
static const struct {
	long type;
	const char *name;
} changing_filesystems[] = {
	{ 0x6969, "NFS" },
	{ 0x65735546, "FUSE" },
	{ 0x65735543, "FUSE control" },
	{ 0x517b, "SMB" },
	{ 0xfe534d42, "SMB2" },
	{ 0xff534d42, "CIFS" },
	{ 0x01021997, "9p" },
	{ 0x00c36400, "Ceph" },
	{ 0x5346414f, "AFS" },
	{ 0x6b414653, "AFS" },
	{ 0x73757245, "Coda" },
	{ 0x7461636f, "OCFS2" },
	{ 0x01161970, "GFS2" },
	{ 0x47504653, "GPFS" },
	{ 0x0bd00bd0, "Lustre" },
	{ 0x19830326, "FhGFS/BeeGFS" },
	{ 0x013111a8, "IBRIX" },
	{ 0x786f4256, "VirtualBox shared folder" },
};

/* The name of the image's filesystem if it is one of those; "unknown"
 * when fstatfs fails (copied as well); NULL when it may be mapped. */
static const char *changing_filesystem(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return "an unknown filesystem";
	for (size_t i = 0; i < sizeof(changing_filesystems) /
			       sizeof(changing_filesystems[0]); i++)
		if ((unsigned long)sf.f_type ==
		    (unsigned long)changing_filesystems[i].type)
			return changing_filesystems[i].name;
	return NULL;
}

int image_memory_mapped_why(const struct ckpt_image *img, const char **why)
{
	static char text[128];
	const char *fs;

	if (restart_copy_memory) {
		*why = "--copy";
		return 0;
	}
	if (!(img->hdr.flags & CKPT_IMG_F_MAPPABLE)) {
		*why = "written by an older libckpt";
		return 0;
	}
	fs = changing_filesystem(img->fd);
	if (fs) {
		snprintf(text, sizeof(text), "the image is on %s, which may "
			 "change under a mapping", fs);
		*why = text;
		return 0;
	}
	*why = "";
	return 1;
}

int image_memory_mapped(const struct ckpt_image *img)
{
	const char *why;

	return image_memory_mapped_why(img, &why);
}
