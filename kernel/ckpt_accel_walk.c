// SPDX-License-Identifier: GPL-2.0
/*
 * The page-table walk behind both range operations. walk_page_range() is
 * not exported, so this walks pgd/p4d/pud/pmd/pte itself, under
 * mmap_read_lock, over the VMAs of the range only. In 6.1 page tables
 * are freed only under mmap_write_lock, so reading entries with
 * READ_ONCE is safe; clearing dirty bits takes the pte lock.
 *
 * Runs are collected in one kernel page and copied to userspace with the
 * mmap lock dropped (a fault on the user buffer may need that lock). A
 * run is opened only when there is room to emit it later, so a walk that
 * stops because the caller's buffer is full stops with no open run, and
 * never clears a page it did not report.
 */
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/pgtable.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/swap.h>
#include <linux/swapops.h>
#include <linux/uaccess.h>
#include <asm/tlbflush.h>
#include "ckpt_accel.h"

/* Drop the mmap lock at least every this many pmds (1 GiB). */
#define PMDS_PER_LOCK	512
#define KBUF_RUNS	(PAGE_SIZE / sizeof(struct ckpt_accel_run))

enum walk_status {
	WALK_CONTINUE,
	WALK_DONE,		/* the whole range was examined */
	WALK_FULL,		/* max_runs reached */
	WALK_FLUSH,		/* kernel buffer full: copy out and go on */
	WALK_RELOCK,		/* drop the lock for a while and go on */
};

struct walk {
	struct mm_struct *mm;
	enum ckpt_accel_walk_mode mode;
	bool report;		/* write runs */
	bool clear;		/* dirty mode: clear what is reported */
	bool cleared;		/* TLB flush owed */
	unsigned long addr;	/* next address to examine */
	unsigned long end;
	unsigned int pmds;	/* examined since the lock was taken */

	bool run_open;
	unsigned long run_start, run_end;

	struct ckpt_accel_run *kbuf;
	unsigned int kbuf_n;
	struct ckpt_accel_run __user *urun;
	u64 emitted;		/* runs copied to userspace */
	u64 max_runs;
	u64 nr_pages;
};

static void emit_open_run(struct walk *w)
{
	if (!w->run_open)
		return;
	w->kbuf[w->kbuf_n].start = w->run_start;
	w->kbuf[w->kbuf_n].end = w->run_end;
	w->kbuf_n++;
	w->run_open = false;
}

/* Account [addr, addr + size) as a hit; the caller acts on it only if
 * this returns WALK_CONTINUE. */
static enum walk_status note_hit(struct walk *w, unsigned long addr,
				 unsigned long size)
{
	if (!w->report)
		goto accept;
	if (w->run_open && w->run_end == addr) {
		w->run_end += size;
		goto accept;
	}
	emit_open_run(w);
	if (w->emitted + w->kbuf_n >= w->max_runs) {
		w->addr = addr;
		return WALK_FULL;
	}
	if (w->kbuf_n >= KBUF_RUNS) {
		w->addr = addr;
		return WALK_FLUSH;
	}
	w->run_open = true;
	w->run_start = addr;
	w->run_end = addr + size;
accept:
	w->nr_pages += size >> PAGE_SHIFT;
	return WALK_CONTINUE;
}

static bool pte_populated(pte_t pte)
{
	return !pte_none(pte) && !is_pte_marker(pte);
}

/*
 * Whether a pte counts as dirty, and whether its dirty bit may be
 * cleared. Only private anonymous swap-backed pages are tracked: for
 * them reclaim never reads the pte dirty bit (add_to_swap marks the page
 * dirty itself). Everything else that is populated is reported dirty
 * every time, and so is a page that went through swap or migration
 * (PG_dirty or swap cache set): the dirty bit may have been lost there.
 */
static bool pte_dirty_hit(struct vm_area_struct *vma, pte_t pte,
			  bool *clearable)
{
	struct page *page;

	*clearable = false;
	if (!pte_populated(pte))
		return false;
	if (!pte_present(pte) || pte_special(pte) ||
	    (vma->vm_flags & (VM_PFNMAP | VM_IO | VM_MIXEDMAP)))
		return true;
	page = pte_page(pte);
	if (!PageAnon(page) || PageKsm(page) || !PageSwapBacked(page) ||
	    PageDirty(page) || PageSwapCache(page))
		return true;
	*clearable = true;
	return pte_dirty(pte);
}

static enum walk_status walk_ptes(struct walk *w, struct vm_area_struct *vma,
				  pmd_t *pmd, pmd_t pmdval,
				  unsigned long addr, unsigned long end)
{
	enum walk_status st = WALK_CONTINUE;
	spinlock_t *ptl = NULL;
	pte_t *first, *pte;
	bool clearable;
	bool hit;

	if (w->clear)
		first = pte_offset_map_lock(w->mm, pmd, addr, &ptl);
	else
		first = pte_offset_kernel(&pmdval, addr);
	for (pte = first; addr < end; pte++, addr += PAGE_SIZE) {
		pte_t val = ptep_get(pte);

		if (w->mode == CKPT_ACCEL_WALK_DIRTY)
			hit = pte_dirty_hit(vma, val, &clearable);
		else
			hit = pte_populated(val);
		if (!hit)
			continue;
		st = note_hit(w, addr, PAGE_SIZE);
		if (st != WALK_CONTINUE)
			break;
		if (w->clear && clearable) {
			clear_bit(_PAGE_BIT_DIRTY, (unsigned long *)&pte->pte);
			w->cleared = true;
		}
	}
	if (ptl)
		pte_unmap_unlock(first, ptl);
	return st;
}

static enum walk_status walk_pmds(struct walk *w, struct vm_area_struct *vma,
				  pud_t pudval, unsigned long addr,
				  unsigned long end)
{
	pmd_t *pmd = pmd_offset(&pudval, addr);
	enum walk_status st;
	unsigned long next;

	do {
		pmd_t val = READ_ONCE(*pmd);

		next = pmd_addr_end(addr, end);
		st = WALK_CONTINUE;
		if (pmd_none(val))
			;
		else if (!pmd_present(val) || pmd_leaf(val))
			/* Huge or migrating: one block, never tracked finer. */
			st = note_hit(w, addr, next - addr);
		else if (!pmd_bad(val))
			st = walk_ptes(w, vma, pmd, val, addr, next);
		if (st != WALK_CONTINUE)
			return st;
		if (++w->pmds >= PMDS_PER_LOCK || need_resched()) {
			w->addr = next;
			return WALK_RELOCK;
		}
	} while (pmd++, addr = next, addr != end);
	return WALK_CONTINUE;
}

static enum walk_status walk_puds(struct walk *w, struct vm_area_struct *vma,
				  p4d_t p4dval, unsigned long addr,
				  unsigned long end)
{
	pud_t *pud = pud_offset(&p4dval, addr);
	enum walk_status st = WALK_CONTINUE;
	unsigned long next;

	do {
		pud_t val = READ_ONCE(*pud);

		next = pud_addr_end(addr, end);
		if (pud_none(val))
			continue;
		if (pud_leaf(val))
			st = note_hit(w, addr, next - addr);
		else if (pud_bad(val))
			continue;
		else
			st = walk_pmds(w, vma, val, addr, next);
		if (st != WALK_CONTINUE)
			return st;
	} while (pud++, addr = next, addr != end);
	return WALK_CONTINUE;
}

static enum walk_status walk_vma(struct walk *w, struct vm_area_struct *vma,
				 unsigned long addr, unsigned long end)
{
	pgd_t *pgd = pgd_offset(w->mm, addr);
	enum walk_status st;
	unsigned long next;

	do {
		pgd_t pgdval = READ_ONCE(*pgd);
		p4d_t *p4d, p4dval;
		unsigned long p4d_next, a = addr;

		next = pgd_addr_end(addr, end);
		if (pgd_none(pgdval) || pgd_bad(pgdval))
			continue;
		p4d = p4d_offset(pgd, addr);
		do {
			p4d_next = p4d_addr_end(a, next);
			p4dval = READ_ONCE(*p4d);
			if (p4d_none(p4dval) || p4d_bad(p4dval))
				continue;
			st = walk_puds(w, vma, p4dval, a, p4d_next);
			if (st != WALK_CONTINUE)
				return st;
		} while (p4d++, a = p4d_next, a != next);
	} while (pgd++, addr = next, addr != end);
	return WALK_CONTINUE;
}

/* One stretch of the walk under mmap_read_lock. */
static enum walk_status walk_locked(struct walk *w)
{
	struct vm_area_struct *vma;
	enum walk_status st;
	unsigned long s, e;

	w->pmds = 0;
	while (w->addr < w->end) {
		vma = find_vma(w->mm, w->addr);
		if (!vma || vma->vm_start >= w->end)
			break;
		s = max(w->addr, vma->vm_start);
		e = min(w->end, vma->vm_end);
		st = walk_vma(w, vma, s, e);
		if (st != WALK_CONTINUE)
			return st;
		w->addr = e;
	}
	emit_open_run(w);	/* room was reserved when it was opened */
	w->addr = w->end;
	return WALK_DONE;
}

static void flush_local_tlb(void *unused)
{
	__flush_tlb_all();
}

static int copy_runs_out(struct walk *w)
{
	size_t bytes = w->kbuf_n * sizeof(*w->kbuf);

	if (!w->kbuf_n)
		return 0;
	if (copy_to_user(w->urun + w->emitted, w->kbuf, bytes))
		return -EFAULT;
	w->emitted += w->kbuf_n;
	w->kbuf_n = 0;
	return 0;
}

static int walk_all(struct walk *w)
{
	enum walk_status st;
	int err;

	for (;;) {
		if (mmap_read_lock_killable(w->mm))
			return -EINTR;
		st = walk_locked(w);
		/*
		 * flush_tlb_mm_range() is not exported: flush every CPU, once
		 * per lock hold, so the next write sets the dirty bit again.
		 */
		if (w->cleared) {
			on_each_cpu(flush_local_tlb, NULL, 1);
			w->cleared = false;
		}
		mmap_read_unlock(w->mm);
		err = copy_runs_out(w);
		if (err)
			return err;
		if (st == WALK_DONE || st == WALK_FULL)
			return 0;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
}

int ckpt_accel_walk_runs(struct mm_struct *mm, enum ckpt_accel_walk_mode mode,
			 struct ckpt_accel_range *req)
{
	struct walk w = {
		.mm = mm,
		.mode = mode,
		.report = !(req->flags & CKPT_ACCEL_DIRTY_NO_REPORT),
		.clear = req->flags & CKPT_ACCEL_DIRTY_CLEAR,
		.addr = req->start,
		.end = req->end,
		.urun = u64_to_user_ptr(req->runs),
		.max_runs = req->max_runs,
	};
	int err;

	if (w.report) {
		w.kbuf = (void *)__get_free_page(GFP_KERNEL);
		if (!w.kbuf)
			return -ENOMEM;
		atomic_inc(&ckpt_accel_live_objects);
	}
	err = walk_all(&w);
	if (w.kbuf) {
		free_page((unsigned long)w.kbuf);
		atomic_dec(&ckpt_accel_live_objects);
	}
	req->next = w.addr;
	req->nr_runs = w.emitted;
	req->nr_pages = w.nr_pages;
	return err;
}
