/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mkstemp and its family create their file with glibc's internal open,
 * which the open wrappers never see: the file they make is recorded here
 * (libckpt-preload/created_files.c), so that its content is saved at a
 * checkpoint even when no process has it open by then.
 */
#include <stdlib.h>
#include "wrappers.h"

int mkstemp64(char *template);
int mkstemps64(char *template, int suffixlen);
int mkostemp64(char *template, int flags);
int mkostemps64(char *template, int suffixlen, int flags);

DEFINE_NEXT(mkstemp);
DEFINE_NEXT(mkstemp64);
DEFINE_NEXT(mkstemps);
DEFINE_NEXT(mkstemps64);
DEFINE_NEXT(mkostemp);
DEFINE_NEXT(mkostemp64);
DEFINE_NEXT(mkostemps);
DEFINE_NEXT(mkostemps64);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_tmpfiles(void)
{
	RESOLVE_NEXT(mkstemp);
	RESOLVE_NEXT(mkstemp64);
	RESOLVE_NEXT(mkstemps);
	RESOLVE_NEXT(mkstemps64);
	RESOLVE_NEXT(mkostemp);
	RESOLVE_NEXT(mkostemp64);
	RESOLVE_NEXT(mkostemps);
	RESOLVE_NEXT(mkostemps64);
}

static int noted(int fd)
{
	if (fd >= 0)
		created_files_note(fd);
	return fd;
}

CKPT_WRAPPER int mkstemp(char *template)
{
	return noted(NEXT_FN(mkstemp)(template));
}

CKPT_WRAPPER int mkstemp64(char *template)
{
	return noted(NEXT_FN(mkstemp64)(template));
}

CKPT_WRAPPER int mkstemps(char *template, int suffixlen)
{
	return noted(NEXT_FN(mkstemps)(template, suffixlen));
}

CKPT_WRAPPER int mkstemps64(char *template, int suffixlen)
{
	return noted(NEXT_FN(mkstemps64)(template, suffixlen));
}

CKPT_WRAPPER int mkostemp(char *template, int flags)
{
	return noted(NEXT_FN(mkostemp)(template, flags));
}

CKPT_WRAPPER int mkostemp64(char *template, int flags)
{
	return noted(NEXT_FN(mkostemp64)(template, flags));
}

CKPT_WRAPPER int mkostemps(char *template, int suffixlen, int flags)
{
	return noted(NEXT_FN(mkostemps)(template, suffixlen, flags));
}

CKPT_WRAPPER int mkostemps64(char *template, int suffixlen, int flags)
{
	return noted(NEXT_FN(mkostemps64)(template, suffixlen, flags));
}
