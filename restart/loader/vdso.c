// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel's special mappings ([vvar], [vvar_vclock], [vdso] since 6.13;
 * a set read from /proc/self/maps, not a fixed pair). The vdso code reaches
 * its data pages at fixed offsets, so the set always moves as a block.
 * Same kernel: move the current set to the addresses saved in the image,
 * where glibc cached its vdso function pointers. Different kernel: refuse.
 */
#include "loader.h"

static int is_movable_special(const struct maps_entry *e)
{
	return str_starts(e->name, "[v") && !str_eq(e->name, "[vsyscall]");
}

void specials_collect(struct loader *l)
{
	struct special_set *s = &l->specials;
	unsigned i;

	s->n = 0;
	for (i = 0; i < l->nmaps; i++) {
		if (!is_movable_special(&l->maps[i]))
			continue;
		if (s->n == LOADER_MAX_SPECIALS)
			loader_fail("more than %d kernel special mappings",
				    LOADER_MAX_SPECIALS);
		s->map[s->n++] = l->maps[i];
	}
}

/* Lowest start of the image's special regions; 0 if it has none. */
static uint64_t image_specials_base(const struct loader *l, unsigned *count)
{
	uint64_t base = ~0ULL;
	unsigned i;

	*count = 0;
	for (i = 0; i < l->hdr.nregions; i++) {
		if (!region_is_special(&l->regions[i]))
			continue;
		(*count)++;
		if (l->regions[i].start < base)
			base = l->regions[i].start;
	}
	return *count ? base : 0;
}

static const struct ckpt_region *image_special(const struct loader *l,
					       const char *name)
{
	unsigned i;

	for (i = 0; i < l->hdr.nregions; i++)
		if (region_is_special(&l->regions[i]) &&
		    str_eq(image_string(l, l->regions[i].name), name))
			return &l->regions[i];
	return 0;
}

static void fail_layout(const struct maps_entry *e, const char *why)
{
	loader_fail("vdso layout differs from the checkpointing kernel: %s "
		    "(%lu bytes here) %s; cross-kernel restart is not "
		    "supported yet", e->name, e->end - e->start, why);
}

/* Same names, sizes and relative offsets, or fail before anything is
 * torn down. */
void specials_check_image(const struct loader *l)
{
	const struct special_set *s = &l->specials;
	const struct ckpt_region *r;
	uint64_t base;
	unsigned i, count;

	base = image_specials_base(l, &count);
	if (count == 0)
		return;
	if (count != s->n)
		loader_fail("vdso layout differs from the checkpointing kernel: "
			    "the image has %u special mappings, this kernel "
			    "%u; cross-kernel restart is not supported yet",
			    count, s->n);
	for (i = 0; i < s->n; i++) {
		r = image_special(l, s->map[i].name);
		if (!r)
			fail_layout(&s->map[i], "is missing from the image");
		if (r->end - r->start != s->map[i].end - s->map[i].start)
			fail_layout(&s->map[i], "has another size in the image");
		if (r->start - base != s->map[i].start - s->map[0].start)
			fail_layout(&s->map[i], "sits at another offset in the "
				    "image");
	}
}

/*
 * Move [from, from+len) to `to` without clobbering anything: reserve the
 * target with MAP_FIXED_NOREPLACE first (a collision is EEXIST), then let
 * mremap replace the reservation.
 */
long move_mapping(uint64_t from, uint64_t len, uint64_t to)
{
	long ret;

	ret = sys_mmap(to, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		       MAP_FIXED_NOREPLACE, -1, 0);
	if (ret < 0)
		return ret;
	if ((uint64_t)ret != to) {	/* kernel without NOREPLACE */
		sys_munmap(ret, len);
		return -17;		/* EEXIST */
	}
	ret = sys_mremap(from, len, to);
	if (ret < 0) {
		sys_munmap(to, len);
		return ret;
	}
	return 0;
}

/* Park the set in the staging area next to the loader, keeping offsets. */
void specials_stage(struct loader *l)
{
	struct special_set *s = &l->specials;
	struct maps_entry *e;
	uint64_t base, to;
	long err;
	unsigned i;

	if (s->n == 0)
		return;
	base = s->map[0].start;
	if (s->map[s->n - 1].end - base > l->stage_end - l->stage_start)
		loader_fail("the kernel's special mappings span %lu bytes, "
			    "more than the loader's staging area",
			    s->map[s->n - 1].end - base);
	for (i = 0; i < s->n; i++) {
		e = &s->map[i];
		to = l->stage_start + (e->start - base);
		err = move_mapping(e->start, e->end - e->start, to);
		if (err)
			loader_fail("moving %s %lx-%lx to the staging area "
				    "failed: %s", e->name, e->start, e->end,
				    errno_text(err));
		e->end = to + (e->end - e->start);
		e->start = to;
	}
}

/* Move the staged set to the image's addresses, or drop it if the image
 * had none. */
void specials_place(struct loader *l)
{
	struct special_set *s = &l->specials;
	const struct ckpt_region *r;
	struct maps_entry *e;
	unsigned i;
	long err;

	for (i = 0; i < s->n; i++) {
		e = &s->map[i];
		r = image_special(l, e->name);
		if (!r) {
			sys_munmap(e->start, e->end - e->start);
			continue;
		}
		err = move_mapping(e->start, e->end - e->start, r->start);
		if (err)
			loader_fail("moving %s to its saved address %lx-%lx "
				    "failed: %s", e->name, r->start, r->end,
				    err == -17 ? "the address is already in use"
					       : errno_text(err));
	}
}
