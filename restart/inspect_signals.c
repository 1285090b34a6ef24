// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_inspect: the signal state of an image in words and as JSON
 * (inspect_signals.h). Handlers are named like backtrace frames (the
 * mapped ELF file's symbols and line tables); the checkpoint signal is
 * ckpt's, shown with what the program set on it.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "inspect_backtrace.h"
#include "inspect_signals.h"

/* The kernel's sa_flags bits (x86_64 and aarch64 alike); SA_RESTORER is
 * glibc's return path, set on every handler: not shown by name. */
#define KERNEL_SA_RESTORER	0x04000000ULL

static const struct {
	uint64_t flag;
	const char *name;
} flag_names[] = {
	{ SA_NOCLDSTOP, "SA_NOCLDSTOP" }, { SA_NOCLDWAIT, "SA_NOCLDWAIT" },
	{ SA_SIGINFO, "SA_SIGINFO" }, { SA_ONSTACK, "SA_ONSTACK" },
	{ SA_RESTART, "SA_RESTART" }, { SA_NODEFER, "SA_NODEFER" },
	{ SA_RESETHAND, "SA_RESETHAND" },
};
#define NFLAGS (sizeof(flag_names) / sizeof(flag_names[0]))

static uint64_t sig_bit(int sig)
{
	return 1ULL << (sig - 1);
}

const char *signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sig < 32 ? sigabbrev_np(sig) : NULL;

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else if (sig == SIGRTMAX)
		snprintf(buf, len, "SIGRTMAX");
	else if (sig >= SIGRTMIN && sig < SIGRTMAX)
		snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
	else
		snprintf(buf, len, "SIG%d", sig);
	return buf;
}

/* "SIGINT SIGUSR2", "none", or for most signals "all but SIGKILL ..."
 * (libckpt's manager blocks everything). */
static void mask_text(uint64_t mask, char *out, size_t len)
{
	int invert = __builtin_popcountll(mask) > 32;
	size_t used = snprintf(out, len, "%s", invert ? "all but" : "");
	char name[16];

	if (invert)
		mask = ~mask & ~(sig_bit(SIGKILL) | sig_bit(SIGSTOP));
	for (int sig = 1; sig <= CKPT_NSIG && used < len; sig++)
		if (mask & sig_bit(sig))
			used += snprintf(out + used, len - used, "%s%s",
					 used ? " " : "",
					 signal_name(sig, name, sizeof(name)));
	if (!mask && used < len)
		snprintf(out + used, len - used, "%snone", used ? " " : "");
}

/* "SA_SIGINFO SA_RESTART" (and any unknown bits in hex) or "none". */
static void flags_text(uint64_t flags, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	flags &= ~KERNEL_SA_RESTORER;
	for (size_t i = 0; i < NFLAGS && used < len; i++)
		if (flags & flag_names[i].flag) {
			used += snprintf(out + used, len - used, "%s%s",
					 used ? " " : "", flag_names[i].name);
			flags &= ~flag_names[i].flag;
		}
	if (flags && used < len)
		used += snprintf(out + used, len - used, "%s%#llx",
				 used ? " " : "", (unsigned long long)flags);
	if (!used)
		snprintf(out, len, "none");
}

static int is_ckpt_signal(const struct ckpt_image *img, int sig)
{
	return sig == img->hdr.ckpt_signal;
}

/* What is shown: a handler or SIG_IGN, and ckpt's signal. */
static int action_shown(const struct ckpt_image *img, int sig)
{
	return img->signals->action[sig - 1].handler != (uintptr_t)SIG_DFL ||
	       is_ckpt_signal(img, sig);
}

static const char *disposition(const struct ckpt_signal_action *a)
{
	return a->handler == (uintptr_t)SIG_DFL ? "default" :
	       a->handler == (uintptr_t)SIG_IGN ? "ignored" : "handler";
}

static int has_handler(const struct ckpt_signal_action *a)
{
	return a->handler != (uintptr_t)SIG_DFL &&
	       a->handler != (uintptr_t)SIG_IGN;
}

/* The handler's function as a frame names it ("on_usr1 (app.c:20)"),
 * "" when no ELF file maps it. */
static void handler_text(struct inspect_unwinder *u, uint64_t addr,
			 char *out, size_t len)
{
	struct frame fr;

	out[0] = '\0';
	if (!u)
		return;
	inspect_describe_code(u, addr, &fr);
	if (fr.function || fr.object)
		frame_text(&fr, out, len);
}

static void print_action(const struct ckpt_image *img,
			 struct inspect_unwinder *u, int sig)
{
	const struct ckpt_signal_action *a = &img->signals->action[sig - 1];
	char name[16], text[256], flags[160], mask[800];

	printf("  %-12s", signal_name(sig, name, sizeof(name)));
	if (is_ckpt_signal(img, sig)) {
		printf("ckpt's checkpoint signal (the program's disposition: "
		       "%s)\n", disposition(a));
		return;
	}
	if (!has_handler(a)) {
		printf("%s\n", disposition(a));
		return;
	}
	handler_text(u, a->handler, text, sizeof(text));
	flags_text(a->flags, flags, sizeof(flags));
	mask_text(a->mask, mask, sizeof(mask));
	printf("handler %#llx%s%s, flags %s, mask %s\n",
	       (unsigned long long)a->handler, text[0] ? " " : "", text, flags,
	       mask);
}

void print_signal_state(struct ckpt_image *img)
{
	struct inspect_unwinder *u;
	char name[16], mask[800];

	if (!img->signals) {
		printf("\nsignals: not recorded (image format version %u)\n",
		       img->hdr.version);
		return;
	}
	u = inspect_unwinder_new(img);
	printf("\nsignals (dispositions other than the default; ");
	if (img->hdr.ckpt_signal > 0 && img->hdr.ckpt_signal <= CKPT_NSIG)
		printf("ckpt's checkpoint signal: %s):\n",
		       signal_name(img->hdr.ckpt_signal, name, sizeof(name)));
	else
		printf("ckpt had no checkpoint signal):\n");
	for (int sig = 1; sig <= CKPT_NSIG; sig++)
		if (action_shown(img, sig))
			print_action(img, u, sig);
	mask_text(img->signals->process_pending, mask, sizeof(mask));
	printf("  pending for the process: %s\n", mask);
	inspect_unwinder_free(u);
}

void print_thread_signals(const struct ckpt_image *img, uint32_t i)
{
	const struct ckpt_thread_signals *t;
	char blocked[800], pending[800];

	if (!img->signals || i >= img->hdr.nthread_signals)
		return;
	t = &img->thread_signals[i];
	mask_text(t->blocked, blocked, sizeof(blocked));
	mask_text(t->pending, pending, sizeof(pending));
	printf("    signals: blocked %s; pending %s\n", blocked, pending);
}

static void json_mask(struct json_out *j, const char *key, uint64_t mask)
{
	char name[16];

	json_open(j, key, '[');
	for (int sig = 1; sig <= CKPT_NSIG; sig++)
		if (mask & sig_bit(sig))
			json_str(j, NULL, signal_name(sig, name, sizeof(name)));
	json_close(j, ']');
}

static void json_flags(struct json_out *j, uint64_t flags)
{
	json_hex(j, "flags", flags);
	json_open(j, "flag_names", '[');
	for (size_t i = 0; i < NFLAGS; i++)
		if (flags & flag_names[i].flag)
			json_str(j, NULL, flag_names[i].name);
	json_close(j, ']');
}

static void json_action(struct json_out *j, const struct ckpt_image *img,
			struct inspect_unwinder *u, int sig)
{
	const struct ckpt_signal_action *a = &img->signals->action[sig - 1];
	char name[16], text[256];

	json_open(j, NULL, '{');
	json_i64(j, "signal", sig);
	json_str(j, "name", signal_name(sig, name, sizeof(name)));
	json_bool(j, "ckpt_signal", is_ckpt_signal(img, sig));
	json_str(j, "disposition", disposition(a));
	if (has_handler(a)) {
		handler_text(u, a->handler, text, sizeof(text));
		json_hex(j, "handler", a->handler);
		json_str(j, "handler_text", text[0] ? text : NULL);
		json_flags(j, a->flags);
		json_mask(j, "mask", a->mask);
	}
	json_close(j, '}');
}

void json_signal_state(struct json_out *j, struct ckpt_image *img)
{
	struct inspect_unwinder *u;
	char name[16];

	if (!img->signals) {
		json_str(j, "signals", NULL);
		return;
	}
	u = inspect_unwinder_new(img);
	json_open(j, "signals", '{');
	if (img->hdr.ckpt_signal > 0 && img->hdr.ckpt_signal <= CKPT_NSIG) {
		json_i64(j, "ckpt_signal", img->hdr.ckpt_signal);
		json_str(j, "ckpt_signal_name", signal_name(
				 img->hdr.ckpt_signal, name, sizeof(name)));
	}
	json_open(j, "actions", '[');
	for (int sig = 1; sig <= CKPT_NSIG; sig++)
		if (action_shown(img, sig))
			json_action(j, img, u, sig);
	json_close(j, ']');
	json_mask(j, "process_pending", img->signals->process_pending);
	json_close(j, '}');
	inspect_unwinder_free(u);
}

void json_thread_signals(struct json_out *j, const struct ckpt_image *img,
			 uint32_t i)
{
	const struct ckpt_thread_signals *t;

	if (!img->signals || i >= img->hdr.nthread_signals) {
		json_str(j, "signals", NULL);
		return;
	}
	t = &img->thread_signals[i];
	json_open(j, "signals", '{');
	json_mask(j, "blocked", t->blocked);
	json_mask(j, "pending", t->pending);
	json_close(j, '}');
}
