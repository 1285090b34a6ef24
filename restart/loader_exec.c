// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Place and exec the restart loader. The blob (ckpt_restart_loader.bin) is
 * position-independent and relocation-free; we wrap it in a minimal ET_EXEC
 * ELF whose PT_LOADs (code, data, the loader's parameters) sit at a base
 * no image region uses, write that to a memfd and execveat() it with the
 * program's own argv and environment. The kernel then maps the loader
 * exactly there, while ASLR still picks the stack and vdso (the loader
 * moves those).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ckpt/coord_client.h"
#include "loader_abi.h"
#include "../protocol/client_internal.h"
#include "emulator_exec.h"
#include "loader_exec.h"
#include "memory_mode.h"

#define BLOB_MAX	(16 << 20)
#ifndef MFD_EXEC
#define MFD_EXEC	0x0010U		/* Linux 6.3; older kernels: EINVAL */
#endif

struct blob {
	struct loader_blob_header h;
	unsigned char *data;		/* [0, h.data_end), zero-padded */
};

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -code;
}

static int blob_header_ok(const struct loader_blob_header *h, size_t size)
{
	return h->magic == LOADER_BLOB_MAGIC && h->entry < h->rx_end &&
	       h->rx_end % LOADER_PAGE == 0 && h->rx_end <= h->data_end &&
	       h->data_end <= h->rw_end && h->rw_end % LOADER_PAGE == 0 &&
	       h->rw_end <= BLOB_MAX && size <= h->data_end;
}

static int blob_load(struct blob *b, char *err, size_t errlen)
{
	char path[4096];
	struct stat st;
	ssize_t n;
	int fd, ret;

	ret = ckpt_install_path("../lib/ckpt/ckpt_restart_loader.bin", path,
				sizeof(path));
	if (ret < 0)
		return fail(err, errlen, -ret, "finding the restart loader "
			    "failed: %s", strerror(-ret));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st))
		return fail(err, errlen, errno, "opening the restart loader %s "
			    "failed: %s", path, strerror(errno));
	if (st.st_size < (off_t)sizeof(b->h) || st.st_size > BLOB_MAX) {
		close(fd);
		return fail(err, errlen, ENOEXEC, "the restart loader %s is "
			    "damaged (%lld bytes)", path,
			    (long long)st.st_size);
	}
	n = pread(fd, &b->h, sizeof(b->h), 0);
	if (n != sizeof(b->h) || !blob_header_ok(&b->h, st.st_size)) {
		close(fd);
		return fail(err, errlen, ENOEXEC, "the restart loader %s is "
			    "damaged (bad header)", path);
	}
	b->data = calloc(1, b->h.data_end);
	if (!b->data || pread(fd, b->data, st.st_size, 0) != st.st_size) {
		ret = b->data ? EIO : ENOMEM;
		close(fd);
		return fail(err, errlen, ret, "reading the restart loader %s "
			    "failed: %s", path, strerror(ret));
	}
	close(fd);
	return 0;
}

/* Lowest base in [lo, hi - need] with [base - margin, base + need +
 * margin) free of regions (sorted, validated). */
static int find_gap(const struct ckpt_image *img, uint64_t lo, uint64_t hi,
		    uint64_t need, uint64_t margin, uint64_t *base)
{
	uint64_t cand = lo;
	uint32_t i;

	for (i = 0; i < img->hdr.nregions; i++) {
		const struct ckpt_region *r = &img->regions[i];

		if (r->end + margin <= cand)
			continue;
		if (cand + need + margin <= r->start)
			break;
		cand = r->end + margin;
	}
	if (cand > hi || need > hi - cand)
		return -ENOMEM;
	*base = cand;
	return 0;
}

/* Start of the program break at checkpoint, 0 if none. */
static uint64_t image_heap_start(const struct ckpt_image *img)
{
	uint32_t i;

	if (img->hdr.flags & CKPT_IMG_F_HAS_BRK)
		return img->hdr.brk_start;
	for (i = 0; i < img->hdr.nregions; i++)
		if (img->regions[i].kind == CKPT_REGION_HEAP)
			return img->regions[i].start;
	return 0;
}

/* The break anchor can be used: the image has a page-aligned break and
 * randomization is not wanted (the anchor needs ADDR_NO_RANDOMIZE). */
static int can_anchor_break(const struct ckpt_image *img)
{
	const struct ckpt_image_header *h = &img->hdr;

	return (h->flags & CKPT_IMG_F_HAS_BRK) && !getenv("CKPT_RESTART_ASLR") &&
	       h->brk_start % LOADER_PAGE == 0;
}

int loader_choose_base(const struct ckpt_image *img, uint64_t size,
		       uint64_t *base)
{
	uint64_t heap = image_heap_start(img);
	uint64_t need = size + (can_anchor_break(img) ? LOADER_PAGE :
				LOADER_BRK_WINDOW);

	if (heap > LOADER_LOW_START + LOADER_LOW_MARGIN &&
	    !find_gap(img, LOADER_LOW_START, heap - LOADER_LOW_MARGIN, need,
		      LOADER_LOW_MARGIN, base))
		return 0;
	return find_gap(img, LOADER_HIGH_START, LOADER_HIGH_END, size,
			LOADER_MARGIN, base);
}

/*
 * The kernel puts the program break right after the highest PT_LOAD of
 * an ET_EXEC (no randomization under ADDR_NO_RANDOMIZE). A one-page,
 * file-less segment that ends exactly where the saved heap starts makes
 * the new break start there; the loader unmaps that page and grows the
 * heap with brk() (restart/loader/regions.c). Only possible when the
 * loader sits below the heap. Returns the segment's end, 0 if not used.
 */
static uint64_t brk_anchor(const struct ckpt_image *img, uint64_t base,
			   uint64_t size)
{
	const struct ckpt_image_header *h = &img->hdr;

	if (!can_anchor_break(img) || base + size + LOADER_PAGE > h->brk_start)
		return 0;
	return h->brk_start;
}

/* ELF header + up to 5 program headers, padded to one page; then the
 * blob; then the parameters (restart/loader_abi.h). */
static void build_elf_header(unsigned char *page, const struct blob *b,
			     uint64_t base, uint16_t machine, uint64_t anchor)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)page;
	Elf64_Phdr *ph = (Elf64_Phdr *)(page + sizeof(*eh));
	const struct loader_blob_header *h = &b->h;

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_ident[EI_OSABI] = ELFOSABI_SYSV;
	eh->e_type = ET_EXEC;
	eh->e_machine = machine;
	eh->e_version = EV_CURRENT;
	eh->e_entry = base + h->entry;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = anchor ? 5 : 4;

	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
		.p_offset = LOADER_PAGE, .p_vaddr = base, .p_paddr = base,
		.p_filesz = h->rx_end, .p_memsz = h->rx_end,
		.p_align = LOADER_PAGE };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_W,
		.p_offset = LOADER_PAGE + h->rx_end,
		.p_vaddr = base + h->rx_end, .p_paddr = base + h->rx_end,
		.p_filesz = h->data_end - h->rx_end,
		.p_memsz = h->rw_end - h->rx_end, .p_align = LOADER_PAGE };
	ph[2] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R,
		.p_offset = LOADER_PAGE + h->rw_end,
		.p_vaddr = base + h->rw_end, .p_paddr = base + h->rw_end,
		.p_filesz = LOADER_PARAMS_SIZE, .p_memsz = LOADER_PARAMS_SIZE,
		.p_align = LOADER_PAGE };
	ph[3] = (Elf64_Phdr){ .p_type = PT_GNU_STACK,
		.p_flags = PF_R | PF_W, .p_align = 16 };
	if (anchor)
		ph[4] = (Elf64_Phdr){ .p_type = PT_LOAD,
			.p_flags = PF_R | PF_W, .p_offset = 0,
			.p_vaddr = anchor - LOADER_PAGE,
			.p_paddr = anchor - LOADER_PAGE, .p_filesz = 0,
			.p_memsz = LOADER_PAGE, .p_align = LOADER_PAGE };
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

/* The parameters as LOADER_ARGC strings, zero-padded to their segment. */
static int pack_params(char *const params[LOADER_ARGC], char *out,
		       char *err, size_t errlen)
{
	size_t off = 0, len;

	memset(out, 0, LOADER_PARAMS_SIZE);
	for (int i = 0; i < LOADER_ARGC; i++) {
		len = strlen(params[i]) + 1;
		if (len > LOADER_PARAMS_SIZE - off)
			return fail(err, errlen, ENAMETOOLONG, "the restart "
				    "loader's parameters exceed %llu bytes",
				    LOADER_PARAMS_SIZE);
		memcpy(out + off, params[i], len);
		off += len;
	}
	return 0;
}

static int make_loader_elf(const struct blob *b, uint64_t base,
			   uint64_t anchor, char *const params[LOADER_ARGC],
			   char *err, size_t errlen)
{
	unsigned char page[LOADER_PAGE] = { 0 };
	static char packed[LOADER_PARAMS_SIZE];
	int fd, ret;

	ret = pack_params(params, packed, err, errlen);
	if (ret)
		return ret;
	/* Ask for an executable memfd explicitly: with vm.memfd_noexec=1
	 * the default is not executable. */
	fd = memfd_create("ckpt_restart_loader", MFD_CLOEXEC | MFD_EXEC);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create("ckpt_restart_loader", MFD_CLOEXEC);
	if (fd < 0)
		return fail(err, errlen, errno, "creating the loader memfd "
			    "failed: %s", strerror(errno));
	build_elf_header(page, b, base, restart_arch_id(), anchor);
	ret = write_all(fd, page, sizeof(page));
	if (!ret)
		ret = write_all(fd, b->data, b->h.data_end);
	if (!ret && lseek(fd, LOADER_PAGE + b->h.rw_end, SEEK_SET) < 0)
		ret = -errno;
	if (!ret)
		ret = write_all(fd, packed, sizeof(packed));
	if (ret) {
		close(fd);
		return fail(err, errlen, -ret, "writing the loader memfd "
			    "failed: %s", strerror(-ret));
	}
	return fd;
}

/* A vector of the NUL-separated strings at off (size bytes) of the
 * image's string table; NULL when there are none or no memory. */
static char **saved_strings(const struct ckpt_image *img, uint32_t off,
			    uint32_t size)
{
	const char *p = img->strings + off, *end = p + size;
	size_t n = 0, i = 0;
	char **v;

	for (const char *q = p; size && q < end; q += strlen(q) + 1)
		n++;
	v = calloc(n + 1, sizeof(*v));
	for (; v && i < n; p += strlen(p) + 1)
		v[i++] = (char *)p;
	return v;
}

/*
 * Exec the loader with the program's saved argv and environment, so that
 * the restarted process shows them (/proc/PID/cmdline, environ; the
 * loader keeps their pages, restart/loader/args_area.c). Without saved
 * strings, or when this system refuses them (E2BIG: a smaller stack
 * limit than the checkpointed process had), the program name alone and
 * our environment.
 */
static int exec_with_program_args(int fd, const struct ckpt_image *img,
				  const char *image_path)
{
	const struct ckpt_image_header *h = &img->hdr;
	char *name[2] = { (char *)h->program, NULL };
	char **argv = saved_strings(img, h->cmdline, h->cmdline_size);
	char **envp = saved_strings(img, h->environment, h->environment_size);
	int ret;

	if (argv && argv[0] && envp) {
		emulator_exec(fd, argv, envp);
		syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
		if (errno == E2BIG)
			fprintf(stderr, "ckpt_restart: %s: note: the saved "
				"command line and environment (%u bytes) are "
				"too long for an exec here (a smaller stack "
				"limit?): the restarted process shows the "
				"program name only\n", image_path,
				h->cmdline_size + h->environment_size);
	}
	free(argv);
	free(envp);
	ret = emulator_exec(fd, name, environ);
	if (ret < 0)
		return ret;
	syscall(SYS_execveat, fd, "", name, environ, AT_EMPTY_PATH);
	return -errno;
}

/* The chain links' fds for the loader ("fd,fd,..."), kept open across
 * the exec; the loader closes them before the hand-off. */
static int link_fds_arg(const struct ckpt_image *img, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (uint32_t i = 0; i < img->hdr.nlinks; i++) {
		int fd = img->link_fds[i];

		if (fd < 0 || fcntl(fd, F_SETFD, 0) < 0 ||
		    fcntl(fd, F_SETFL, 0) < 0)
			return fd < 0 ? -EBADF : -errno;
		used += snprintf(buf + used, len - used, "%s%d", i ? "," : "",
				 fd);
		if (used >= len)
			return -E2BIG;
	}
	return 0;
}

int loader_exec(const struct ckpt_image *img, const char *image_path,
		const char *coord_addr, const char *ckpt_dir, int plan_fd,
		int keep_fd_end, char *err, size_t errlen)
{
	char fd_arg[16], hash_arg[24], end_arg[24], plan_arg[16], keep_arg[16];
	char progress_arg[16];
	char links_arg[16 * CKPT_LINKS_MAX];
	uint64_t base, size, anchor;
	struct blob b;
	int fd, ret;

	ret = blob_load(&b, err, errlen);
	if (ret)
		return ret;
	size = loader_range_size(b.h.rw_end, img->hdr.meta_size +
				 image_vdso_code_size(img) +
				 (image_memory_mapped(img) ? LOADER_VERIFY_BUF +
				  LOADER_PAGE : 0) +
				 (image_memory_mapped(img) && img->hdr.nlinks ?
				  LOADER_PATCH_WORK : 0) +
				 (image_has_compressed_extents(img) ?
				  LOADER_DECODE_WORK : 0));
	if (loader_choose_base(img, size, &base)) {
		free(b.data);
		return fail(err, errlen, ENOMEM, "no free address range of %llu "
			    "bytes for the restart loader below the heap or "
			    "between %#llx and %#llx", (unsigned long long)size,
			    LOADER_HIGH_START, LOADER_HIGH_END);
	}
	anchor = brk_anchor(img, base, size);
	snprintf(fd_arg, sizeof(fd_arg), "%d", img->fd);
	/* one image restarted in place: its loader alone may draw */
	snprintf(progress_arg, sizeof(progress_arg), "%ld",
		 !plan_fd && isatty(STDERR_FILENO) ?
		 ckpt_cc_progress_ms("ckpt_restart", LOADER_PROGRESS_MS) : 0);
	snprintf(plan_arg, sizeof(plan_arg), "%d", plan_fd);
	snprintf(keep_arg, sizeof(keep_arg), "%d", plan_fd ? keep_fd_end : 0);
	snprintf(hash_arg, sizeof(hash_arg), "%llx",
		 (unsigned long long)img->hdr.header_hash);
	snprintf(end_arg, sizeof(end_arg), "%llx",
		 (unsigned long long)(base + size));
	ret = link_fds_arg(img, links_arg, sizeof(links_arg));
	if (ret) {
		free(b.data);
		return fail(err, errlen, -ret, "keeping the chain links open "
			    "for the restart loader failed: %s",
			    strerror(-ret));
	}
	char *const params[LOADER_ARGC] = {
		[0] = LOADER_PARAMS_MAGIC,
		[LOADER_ARG_IMAGE_FD] = fd_arg,
		[LOADER_ARG_IMAGE_PATH] = (char *)image_path,
		[LOADER_ARG_COORD_ADDR] = (char *)coord_addr,
		[LOADER_ARG_CKPT_DIR] = (char *)ckpt_dir,
		[LOADER_ARG_HEADER_HASH] = hash_arg,
		[LOADER_ARG_RANGE_END] = end_arg,
		[LOADER_ARG_PLAN_FD] = plan_arg,
		[LOADER_ARG_KEEP_FD_END] = keep_arg,
		[LOADER_ARG_MAP_IMAGE] = image_memory_mapped(img) ? "1" : "0",
		[LOADER_ARG_LINK_FDS] = links_arg,
		[LOADER_ARG_PROGRESS] = progress_arg,
		[LOADER_ARG_STOPPED] = restart_stopped ? "1" : "0",
	};

	fd = make_loader_elf(&b, base, anchor, params, err, errlen);
	free(b.data);
	if (fd < 0)
		return fd;
	/* Without randomization the break lands on the anchor. The mmap
	 * layout of the restored process is then not randomized either;
	 * libckpt restores the saved personality, so programs it starts
	 * get ASLR as usual. CKPT_RESTART_ASLR=1 keeps randomization and
	 * gives up the exact break. */
	if (anchor && personality(0xffffffff) != -1)
		personality(personality(0xffffffff) | ADDR_NO_RANDOMIZE);

	ret = -exec_with_program_args(fd, img, image_path);
	close(fd);
	return fail(err, errlen, ret, "executing the restart loader failed: "
		    "%s", strerror(ret));
}
