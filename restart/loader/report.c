// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Error reports: one line "ckpt_restart: IMAGE: what failed: why" on fd 2,
 * then exit 1; notes the same with "note: " and no exit. Works at any point of the restart, also after the address
 * space is half rebuilt: only the loader's own bss is used.
 */
#include <linux/errno.h>
#include "loader.h"

/* Set at run time: an initialised pointer would need a relocation. */
static const char *report_image;

void report_set_image(const char *path)
{
	report_image = path;
}

/* Inline strings, not pointers: the blob must stay relocation-free. */
static const struct {
	int err;
	char text[40];
} errno_table[] = {
	{ EPERM, "Operation not permitted" },
	{ ENOENT, "No such file or directory" },
	{ EINTR, "Interrupted system call" },
	{ EIO, "Input/output error" },
	{ EBADF, "Bad file descriptor" },
	{ ENOMEM, "Cannot allocate memory" },
	{ EACCES, "Permission denied" },
	{ EFAULT, "Bad address" },
	{ EBUSY, "Device or resource busy" },
	{ EEXIST, "File exists" },
	{ ENODEV, "No such device" },
	{ ENOTDIR, "Not a directory" },
	{ EISDIR, "Is a directory" },
	{ EINVAL, "Invalid argument" },
	{ ENFILE, "Too many open files in system" },
	{ EMFILE, "Too many open files" },
	{ ETXTBSY, "Text file busy" },
	{ EFBIG, "File too large" },
	{ ENOSPC, "No space left on device" },
	{ EROFS, "Read-only file system" },
	{ ENAMETOOLONG, "File name too long" },
	{ ENOSYS, "Function not implemented" },
	{ ELOOP, "Too many levels of symbolic links" },
	{ EOVERFLOW, "Value too large for defined data type" },
	{ ESTALE, "Stale file handle" },
};

const char *errno_text(long err)
{
	unsigned i;

	if (err < 0)
		err = -err;
	for (i = 0; i < sizeof(errno_table) / sizeof(errno_table[0]); i++)
		if (errno_table[i].err == err)
			return errno_table[i].text;
	return "Unknown error";
}

struct out {
	char *buf;
	size_t cap, len;
};

static void out_char(struct out *o, char c)
{
	if (o->len + 1 < o->cap)
		o->buf[o->len++] = c;
}

static void out_str(struct out *o, const char *s)
{
	while (*s)
		out_char(o, *s++);
}

static void out_num(struct out *o, uint64_t v, unsigned base)
{
	char digits[24];
	int n = 0;

	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n)
		out_char(o, digits[--n]);
}

/*
 * A printf subset: %s %c %d %u %x with an optional l/ll/z length, %%.
 * Always NUL-terminates; returns the length written.
 */
size_t fmt_v(char *buf, size_t cap, const char *fmt, va_list ap)
{
	struct out o = { buf, cap, 0 };
	int longs;
	int64_t sv;

	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			out_char(&o, *fmt);
			continue;
		}
		fmt++;
		for (longs = 0; *fmt == 'l' || *fmt == 'z'; fmt++)
			longs = 1;
		switch (*fmt) {
		case 's':
			out_str(&o, va_arg(ap, const char *));
			break;
		case 'c':
			out_char(&o, (char)va_arg(ap, int));
			break;
		case 'd':
			sv = longs ? va_arg(ap, int64_t) : va_arg(ap, int);
			if (sv < 0) {
				out_char(&o, '-');
				sv = -sv;
			}
			out_num(&o, (uint64_t)sv, 10);
			break;
		case 'u':
		case 'x':
			out_num(&o, longs ? va_arg(ap, uint64_t) :
					    va_arg(ap, unsigned),
				*fmt == 'x' ? 16 : 10);
			break;
		case '%':
			out_char(&o, '%');
			break;
		default:	/* unsupported: print nothing, stop at NUL */
			if (!*fmt)
				fmt--;
			break;
		}
	}
	if (o.cap)
		o.buf[o.len] = '\0';
	return o.len;
}

size_t fmt_v_args(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = fmt_v(buf, cap, fmt, ap);
	va_end(ap);
	return n;
}

/* "ckpt_restart: IMAGE: " prefix what fmt says, one line on fd 2. */
static void report_line(const char *prefix, const char *fmt, va_list ap)
{
	static char line[8192];
	struct out o = { line, sizeof(line) - 1, 0 };

	out_str(&o, "ckpt_restart: ");
	out_str(&o, report_image ? report_image : "loader");
	out_str(&o, ": ");
	out_str(&o, prefix);
	o.len += fmt_v(line + o.len, o.cap - o.len, fmt, ap);
	line[o.len++] = '\n';
	progress_clear();
	sys_write(2, line, o.len);
}

void loader_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_line("", fmt, ap);
	va_end(ap);
	sys_exit_group(1);
}

/* Something the restart could not do, and goes on without. */
void loader_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_line("note: ", fmt, ap);
	va_end(ap);
}
