// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel's rule (fs/exec.c, security/commoncap.c), checked by
 * experiment in tests/security/test_image_trust.py: the set-ID bits count
 * unless the file's mount is nosuid or we run with no_new_privs; the new
 * program then gets secure execution (AT_SECURE) when its effective uid or
 * gid differs from our real ones, or, for a caller other than root, when
 * file capabilities give it privileges. Under secure execution the
 * dynamic loader ignores LD_PRELOAD, so libckpt.so never loads. Root
 * running a set-user-ID-root program, or anyone running a program
 * set-user-ID to themselves, keeps the preload: that program is
 * checkpointed as usual.
 */
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "setid_exec.h"

static void describe_bits(const struct stat *st, int setuid, int setgid,
			  char *buf, size_t len)
{
	struct passwd *pw = getpwuid(st->st_uid);
	struct group *gr = getgrgid(st->st_gid);
	char u[300] = "", g[300] = "";

	if (setuid)
		snprintf(u, sizeof(u), "set-user-ID %s (uid %u)",
			 pw ? pw->pw_name : "an unknown user", (unsigned)st->st_uid);
	if (setgid)
		snprintf(g, sizeof(g), "set-group-ID %s (gid %u)",
			 gr ? gr->gr_name : "an unknown group", (unsigned)st->st_gid);
	snprintf(buf, len, "%s%s%s%s", u[0] || g[0] ? "is " : "", u,
		 u[0] && g[0] ? " and " : "", g);
}

static int bits_ignored(const char *path)
{
	struct statvfs vfs;

	return prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ||
	       (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID));
}

static int has_file_caps(const char *path)
{
	return getxattr(path, "security.capability", NULL, 0) > 0;
}

void setid_exec_warn(const char *path)
{
	char bits[700];
	struct stat st;
	int setuid, setgid, caps, other;

	if (stat(path, &st) < 0)
		return;
	setuid = !!(st.st_mode & S_ISUID);
	/* Set-group-ID without group execute is mandatory locking, not
	 * a privilege. */
	setgid = (st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP);
	caps = getuid() != 0 && has_file_caps(path);
	if (!setuid && !setgid && !caps)
		return;
	describe_bits(&st, setuid, setgid, bits, sizeof(bits));
	if (caps)
		snprintf(bits + strlen(bits), sizeof(bits) - strlen(bits),
			 "%shas file capabilities", bits[0] ? " and " : "");
	if (bits_ignored(path)) {
		fprintf(stderr, "ckpt_launch: note: %s %s, but the kernel "
			"ignores that here (nosuid mount or no_new_privs): it "
			"runs with your own privileges and is checkpointed as "
			"usual\n", path, bits);
		return;
	}
	other = caps || (setuid && st.st_uid != getuid()) ||
		(setgid && st.st_gid != getgid());
	if (other)
		fprintf(stderr, "ckpt_launch: warning: %s %s: the kernel "
			"runs it with other privileges, so the dynamic loader "
			"ignores LD_PRELOAD and it will not be checkpointed\n",
			path, bits);
	else
		fprintf(stderr, "ckpt_launch: note: %s %s, which changes "
			"nothing for you (uid %u, gid %u): it runs with your "
			"own privileges, libckpt.so is preloaded and it is "
			"checkpointed as usual\n", path, bits,
			(unsigned)getuid(), (unsigned)getgid());
}
