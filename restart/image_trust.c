// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The ownership and mode policy for images (image_trust.h). Checked on
 * the open descriptor (fstat), never by path: the file checked is the file
 * read. Everything else ckpt_restart and the loader read of an image comes
 * through that same descriptor.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "image_trust.h"

static const char *user_name(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);

	return pw ? pw->pw_name : "an unknown user";
}

static const char *group_name(gid_t gid)
{
	struct group *gr = getgrgid(gid);

	return gr ? gr->gr_name : "an unknown group";
}

void image_trust_caller(char *buf, size_t len)
{
	uid_t uid = geteuid();

	snprintf(buf, len, "%s, uid %u", user_name(uid), (unsigned)uid);
}

int image_trust_check(int fd, char *why, size_t len)
{
	char caller[300] = "", writers[300] = "";
	struct stat st;

	if (fstat(fd, &st) < 0) {
		int err = errno;

		snprintf(why, len, "cannot stat: %s", strerror(err));
		return -err;
	}
	if (st.st_uid != geteuid())
		image_trust_caller(caller, sizeof(caller));
	/* With an ACL the group bits are its mask: they show any named
	 * user or group that may write. */
	if (st.st_mode & S_IWOTH)
		snprintf(writers, sizeof(writers), ", writable by every user");
	else if (st.st_mode & S_IWGRP)
		snprintf(writers, sizeof(writers), ", writable by group %s "
			 "(gid %u)", group_name(st.st_gid),
			 (unsigned)st.st_gid);
	snprintf(why, len, "owned by %s (uid %u)%s%s%s%s, mode %04o",
		 user_name(st.st_uid), (unsigned)st.st_uid,
		 caller[0] ? ", not by you (" : "", caller,
		 caller[0] ? ")" : "", writers,
		 (unsigned)(st.st_mode & 07777));
	return caller[0] || writers[0] ? -EPERM : 0;
}
