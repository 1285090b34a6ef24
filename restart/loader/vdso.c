// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel's special mappings ([vvar], [vvar_vclock], [vdso] since 6.13;
 * a set read from /proc/self/maps, not a fixed pair). The vdso code reaches
 * its data pages at fixed offsets, so the set always moves as a block.
 * Same kernel (same set; if the image carries the old vdso's code, the
 * same bytes): move the current set to the addresses saved in the image,
 * where glibc cached its vdso function pointers. Another kernel: our set
 * stays in the staging area, and the old vdso's code goes back to its
 * address with its entry points sent on to ours (vdso_redirect.c).
 */
#include "loader.h"
#include "../loader_abi.h"

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

/* 0 if both sets have the same names, sizes and relative offsets; else
 * what differs, and *name says for which mapping. */
static const char *layout_difference(const struct loader *l, uint64_t base,
				     unsigned count, const char **name)
{
	const struct special_set *s = &l->specials;
	const struct ckpt_region *r;
	unsigned i;

	*name = "the set";
	if (count != s->n)
		return "has another number of mappings";
	for (i = 0; i < s->n; i++) {
		*name = s->map[i].name;
		r = image_special(l, s->map[i].name);
		if (!r)
			return "is missing from the image";
		if (r->end - r->start != s->map[i].end - s->map[i].start)
			return "has another size in the image";
		if (r->start - base != s->map[i].start - s->map[0].start)
			return "sits at another offset in the image";
	}
	return 0;
}

static const struct ckpt_region *image_vdso(const struct loader *l)
{
	unsigned i;

	for (i = 0; i < l->hdr.nregions; i++)
		if (l->regions[i].kind == CKPT_REGION_VDSO)
			return &l->regions[i];
	return 0;
}

static const struct maps_entry *current_vdso(const struct loader *l)
{
	unsigned i;

	for (i = 0; i < l->specials.n; i++)
		if (str_eq(l->specials.map[i].name, "[vdso]"))
			return &l->specials.map[i];
	return 0;
}

/* The old vdso's code, hash-checked, into the work area (restart/loader_exec.c
 * sized it for this). */
static unsigned char *read_old_vdso(struct loader *l,
				    const struct ckpt_region *r)
{
	uint64_t len = r->end - r->start;
	unsigned char *buf;

	if (len > LOADER_STAGE_SIZE)
		loader_fail("vdso: the saved vdso of %lu bytes is implausibly "
			    "large: the image is corrupt", len);
	buf = (unsigned char *)work_alloc(l, len);
	region_read_data(l, r, buf);
	return buf;
}

static int same_vdso_code(const struct loader *l, const struct vdso_plan *p)
{
	const struct maps_entry *cur = current_vdso(l);
	uint64_t len = p->old_vdso->end - p->old_vdso->start;

	return cur && cur->end - cur->start == len &&
	       !memcmp(p->old_code, (const void *)cur->start, len);
}

static void plan_redirect(struct loader *l, const char *name,
			  const char *diff)
{
	struct vdso_plan *p = &l->vdso;
	const struct maps_entry *cur = current_vdso(l);

	if (p->old_vdso && !p->old_code)
		loader_fail("vdso layout differs from the checkpointing kernel: "
			    "%s %s, and the image carries no vdso code (made by "
			    "an older ckpt) to redirect", name, diff);
	p->mode = VDSO_REDIRECT;
	if (p->old_code)
		vdso_plan_redirect(p, p->old_vdso->end - p->old_vdso->start,
				   cur ? (const unsigned char *)cur->start : 0,
				   cur ? cur->end - cur->start : 0);
}

/*
 * Before the point of no return: drop, move or redirect (enum vdso_mode),
 * and fail now if the old vdso cannot be redirected.
 */
void specials_plan(struct loader *l)
{
	struct vdso_plan *p = &l->vdso;
	const char *diff, *name;
	unsigned count;
	uint64_t base;

	base = image_specials_base(l, &count);
	p->mode = VDSO_DROP;
	if (count == 0)
		return;
	p->old_vdso = image_vdso(l);
	if (p->old_vdso && p->old_vdso->nextents)
		p->old_code = read_old_vdso(l, p->old_vdso);
	diff = layout_difference(l, base, count, &name);
	if (!diff && p->old_code && !same_vdso_code(l, p)) {
		name = "[vdso]";
		diff = "holds other code";
	}
	if (!diff) {
		p->mode = VDSO_MOVE;
		return;
	}
	plan_redirect(l, name, diff);
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

static void move_to_saved_addresses(struct loader *l)
{
	struct special_set *s = &l->specials;
	const struct ckpt_region *r;
	struct maps_entry *e;
	unsigned i;
	long err;

	for (i = 0; i < s->n; i++) {
		e = &s->map[i];
		r = image_special(l, e->name);
		err = move_mapping(e->start, e->end - e->start, r->start);
		if (err)
			loader_fail("moving %s to its saved address %lx-%lx "
				    "failed: %s", e->name, r->start, r->end,
				    err == -17 ? "the address is already in use"
					       : errno_text(err));
	}
}

static void unmap_all(struct loader *l)
{
	unsigned i;

	for (i = 0; i < l->specials.n; i++)
		sys_munmap(l->specials.map[i].start,
			   l->specials.map[i].end - l->specials.map[i].start);
}

static void map_old_special(const struct ckpt_region *r, int prot,
			    const char *what)
{
	long ret;

	ret = sys_mmap(r->start, r->end - r->start, prot, MAP_PRIVATE |
		       MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (ret >= 0 && (uint64_t)ret != r->start) {	/* no NOREPLACE */
		sys_munmap(ret, r->end - r->start);
		ret = -17;
	}
	if (ret < 0)
		loader_fail("vdso: mapping %s at its saved address %lx-%lx "
			    "failed: %s", what, r->start, r->end,
			    ret == -17 ? "the address is already in use"
				       : errno_text(ret));
}

/* The old vdso's code at its address, entry points sent on to ours; the
 * old data pages as read-only zero pages, so no cached pointer dangles. */
static void place_old_specials(struct loader *l)
{
	const struct vdso_plan *p = &l->vdso;
	const struct maps_entry *cur = current_vdso(l);
	const struct ckpt_region *r;
	unsigned i;
	long err;

	for (i = 0; i < l->hdr.nregions; i++) {
		r = &l->regions[i];
		if (!region_is_special(r) || r == p->old_vdso)
			continue;
		map_old_special(r, PROT_READ, image_string(l, r->name));
	}
	if (!p->old_vdso)
		return;
	map_old_special(p->old_vdso, PROT_READ | PROT_WRITE, "the old vdso");
	memcpy((void *)p->old_vdso->start, p->old_code,
	       p->old_vdso->end - p->old_vdso->start);
	vdso_redirect(p, (unsigned char *)p->old_vdso->start,
		      cur ? cur->start : 0);
	err = sys_mprotect(p->old_vdso->start,
			   p->old_vdso->end - p->old_vdso->start,
			   PROT_READ | PROT_EXEC);
	if (err)
		loader_fail("vdso: making the old vdso %lx-%lx executable "
			    "failed: %s", p->old_vdso->start,
			    p->old_vdso->end, errno_text(err));
}

/* After the regions: see specials_plan(). */
void specials_place(struct loader *l)
{
	switch (l->vdso.mode) {
	case VDSO_DROP:
		unmap_all(l);
		break;
	case VDSO_MOVE:
		move_to_saved_addresses(l);
		break;
	case VDSO_REDIRECT:
		place_old_specials(l);
		break;
	}
}
