// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: the image reader and validator (restart/image_check.c,
 * restart/image_fields.c) and ckpt_inspect's decoder, on any bytes as an
 * image file.
 *
 * The input is written to a memfd and opened by path, as ckpt_inspect and
 * ckpt_restart open an image. Each input is tried twice: as it is (the
 * checksums refuse nearly every mutation) and with its header and
 * metadata hashes recomputed, so mutations reach the table and field
 * checks behind them. Each try runs what ckpt_inspect runs (decode, verify
 * every hash, the host checks) and what ckpt_restart adds before the
 * loader (image_verify_restart_data). Nothing is restarted. The seeds are
 * images of restart/selftest/mkimage (the seeds-image rule of build.mk).
 */
#define main ckpt_inspect_main
#include "../../restart/ckpt_inspect.c"
#undef main

#include <stdlib.h>
#include <unistd.h>

static int memfd = -1;
static char memfd_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* ckpt_inspect's decoding goes nowhere; libFuzzer reports on fd 2 */
	if (!freopen("/dev/null", "w", stdout))
		abort();
	memfd = memfd_create("fuzz-image", MFD_CLOEXEC);
	if (memfd < 0)
		abort();
	snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	return 0;
}

static void try_image(const uint8_t *data, size_t size)
{
	struct ckpt_image img;

	if (ftruncate(memfd, 0) ||
	    pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	if (inspect(&img, memfd_path))
		return;
	if (image_open(&img, memfd_path, O_CLOEXEC) == 0 &&
	    image_check_host(&img, IMAGE_CPU_COMPAT) == 0)
		image_verify_restart_data(&img);
	image_close(&img);
}

/* The header and metadata hashes made right for what the input holds. */
static void fix_hashes(uint8_t *data, size_t size)
{
	struct ckpt_image_header h;
	uint64_t hash;

	if (size < CKPT_HEADER_SIZE)
		return;
	memcpy(&h, data, sizeof(h));
	if (h.meta_offset <= size && h.meta_size <= size - h.meta_offset) {
		hash = ckpt_hash64(data + h.meta_offset, h.meta_size, 0);
		memcpy(data + offsetof(struct ckpt_image_header, meta_hash),
		       &hash, sizeof(hash));
	}
	hash = ckpt_header_hash(data, h.header_size);
	memcpy(data + offsetof(struct ckpt_image_header, header_hash), &hash,
	       sizeof(hash));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;

	try_image(data, size);
	if (size < CKPT_HEADER_SIZE)
		return 0;
	fixed = malloc(size);
	if (!fixed)
		abort();
	memcpy(fixed, data, size);
	fix_hashes(fixed, size);
	try_image(fixed, size);
	free(fixed);
	return 0;
}
