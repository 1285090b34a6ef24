// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * An incremental image's extents may lie in the images of its chain
 * (docs/image-format.md, "Chains of incremental images"). ckpt_restart
 * opened and checked every link (restart/image_links.c) and passes their
 * descriptors; an extent's source picks the one to read or map from. The
 * hash of every extent is checked as for the image's own.
 */
#include "loader.h"
#include "../loader_abi.h"

/* "fd,fd,..." (LOADER_ARG_LINK_FDS) into l->link_fds. */
void chain_parse_link_fds(struct loader *l, const char *arg)
{
	char num[16];
	uint64_t fd;
	size_t n;

	l->nlinks = 0;
	while (*arg) {
		for (n = 0; arg[n] && arg[n] != ','; n++)
			if (n + 1 >= sizeof(num))
				loader_fail("loader argument link fds: too long");
		memcpy(num, arg, n);
		num[n] = 0;
		if (parse_u64(num, 10, &fd) || fd > 65535 ||
		    l->nlinks == CKPT_LINKS_MAX)
			loader_fail("loader argument link fds: bad '%s'", arg);
		l->link_fds[l->nlinks++] = (int)fd;
		arg += n + (arg[n] == ',');
	}
}

/* The link table of the image (image.c read the metadata). */
void chain_read_links(struct loader *l)
{
	const struct ckpt_image_header *h = &l->hdr;
	uint64_t start = h->meta_offset, end = start + h->meta_size;

	if (!h->nlinks)
		return;
	if (h->nlinks != l->nlinks)
		loader_fail("the image has %u chain links, ckpt_restart opened "
			    "%u", h->nlinks, l->nlinks);
	if (h->links_offset < start || h->links_offset > end ||
	    h->nlinks > (end - h->links_offset) / sizeof(*l->links) ||
	    (h->links_offset - start) % 8)
		loader_fail("link table out of the metadata block");
	l->links = (const void *)(l->meta + (h->links_offset - start));
}

int extent_source_fd(const struct loader *l, const struct ckpt_extent *e)
{
	if (!e->source)
		return l->image_fd;
	if (e->source > l->nlinks)
		loader_fail("memory %lx-%lx: its data lies in chain link %u, "
			    "the image has %u", e->addr, e->addr + e->len,
			    e->source, l->nlinks);
	return l->link_fds[e->source - 1];
}

/* " in chain link NAME" for an extent of a link, "" for the image's. */
const char *extent_source_name(const struct loader *l,
			       const struct ckpt_extent *e)
{
	static char text[160];
	const char *name;

	if (!e->source || e->source > l->nlinks || !l->links)
		return "";
	name = image_string(l, l->links[e->source - 1].name);
	str_copy(text, " in chain link ", sizeof(text));
	str_copy(text + str_len(text), name, sizeof(text) - str_len(text));
	return text;
}

/*
 * Extents are mapped from one file only: libckpt knows the memory a
 * restart mapped by one device and inode (restart_image.c). The one that
 * holds most of the mappable bytes: the chain's full image, usually.
 */
void chain_choose_map_source(struct loader *l)
{
	uint64_t bytes[CKPT_LINKS_MAX + 1] = { 0 };
	const struct ckpt_region *r;
	const struct ckpt_extent *e;

	l->map_source = 0;
	for (unsigned i = 0; i < l->hdr.nregions; i++) {
		r = &l->regions[i];
		if (r->first_extent > l->hdr.nextents ||
		    r->nextents > l->hdr.nextents - r->first_extent)
			continue;
		for (uint64_t k = 0; k < r->nextents; k++) {
			e = &l->extents[r->first_extent + k];
			if (e->source <= l->nlinks &&
			    extent_mappable_kind(l, r, e))
				bytes[e->source] += e->len;
		}
	}
	for (unsigned s = 1; s <= l->nlinks; s++)
		if (bytes[s] > bytes[l->map_source])
			l->map_source = s;
	l->map_source_bytes = bytes[l->map_source];
}
