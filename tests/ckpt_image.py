# SPDX-License-Identifier: LGPL-2.1-or-later
"""The image format of include/ckpt/image.h in Python: read an image,
change fields, and write it back with its header and metadata hashes
recomputed (so what a test changes passes the checksums and reaches the
checks behind them)."""

import struct
import subprocess

import pytest

# struct ckpt_image_header (include/ckpt/image.h), 464 bytes; the first
# 352 (up to header_hash) are all an older image has, a version 6 image's
# are 448 (up to page_hashes_hash).
HEADER_FMT = "<8sIIIIQQQQQQQIIIIQQQQQQQQQQQiiQQ64s64sQQQQIIIIIIIIiIQIIQQQQIi"
HEADER_FIELDS = (
    "magic version header_size arch page_size cpu_features flags "
    "image_size meta_offset meta_size meta_hash data_offset nregions "
    "nextents nthreads nfds regions_offset extents_offset threads_offset "
    "fds_offset strings_offset strings_size restore_entry "
    "restore_stack_top restore_tls brk_start brk_end vpid vppid "
    "generation ckpt_time_ns program unique_id cpu_features_in_use "
    "header_hash computation_id files_offset nfiles unrestored cmdline "
    "cmdline_size environment environment_size thread_names "
    "thread_names_size manager_vtid reserved_tail links_offset nlinks "
    "chain_length page_hashes_offset page_hashes_size "
    "page_hashes_hash signals_offset nthread_signals ckpt_signal").split()
HEADER_SIZE = struct.calcsize(HEADER_FMT)
assert HEADER_SIZE == 464
OLD_HEADER_SIZE = 352
V6_HEADER_SIZE = 448
REGION_FMT = "<QQIIIIQQQQQII"     # struct ckpt_region, 80 bytes
EXTENT_FMT = "<QQQQIIII"          # struct ckpt_extent, 48 bytes (version 6):
#                                   addr len file_offset hash encoding
#                                   stored_len source flags
LINK_FMT = "<QQQII"               # struct ckpt_image_link, 32 bytes
EXTENT_RAW, EXTENT_ZSTD = 0, 1    # ckpt_extent.encoding
THREAD_FMT = "<iiQQQ"             # struct ckpt_thread_info, 32 bytes
FD_FMT = "<iIIIqIIQQQ"            # struct ckpt_fd_info, 56 bytes (version 3)
FILE_FMT = "<IIIIQQQQQQ"          # struct ckpt_file_record, 64 bytes
SIGNAL_STATE_SIZE = 64 * 32 + 16  # struct ckpt_signal_state (version 7)
assert struct.calcsize(REGION_FMT) == 80
assert struct.calcsize(EXTENT_FMT) == 48
assert struct.calcsize(LINK_FMT) == 32
IMG_F_CHAIN = 0x10
assert struct.calcsize(THREAD_FMT) == 32
assert struct.calcsize(FD_FMT) == 56
assert struct.calcsize(FILE_FMT) == 64

M64 = (1 << 64) - 1
P1, P2, P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def lane(acc, v):
    acc = (acc + v * P2) & M64
    return (rotl(acc, 31) * P1) & M64


def ckpt_hash64(data, seed=0):
    """include/ckpt/hash.h, in Python (also checks the C side)."""
    a, b = (seed + P1 + P2) & M64, (seed + P2) & M64
    c, d = seed, (seed - P1) & M64
    n = len(data)
    i = 0
    while i + 32 <= n:
        w = struct.unpack_from("<4Q", data, i)
        a, b, c, d = lane(a, w[0]), lane(b, w[1]), lane(c, w[2]), lane(d, w[3])
        i += 32
    h = (rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18) + n) & M64
    for byte in data[i:]:
        h = (rotl(h ^ ((byte * P3) & M64), 11) * P1) & M64
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    h ^= h >> 32
    return h


class Image:
    """An image file in memory, patchable with hashes kept right."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = bytearray(f.read())

    def header(self):
        return dict(zip(HEADER_FIELDS,
                        struct.unpack_from(HEADER_FMT, self.data, 0)))

    def set_header(self, **fields):
        h = self.header()
        h.update(fields)
        struct.pack_into(HEADER_FMT, self.data, 0,
                         *[h[k] for k in HEADER_FIELDS])

    def rehash(self):
        h = self.header()
        meta = bytes(self.data[h["meta_offset"]:
                               h["meta_offset"] + h["meta_size"]])
        self.set_header(meta_hash=ckpt_hash64(meta), header_hash=0)
        self.set_header(header_hash=ckpt_hash64(
            bytes(self.data[:h["header_size"]])))

    def regions(self):
        h = self.header()
        return [list(struct.unpack_from(REGION_FMT, self.data,
                                        h["regions_offset"] + 80 * i))
                for i in range(h["nregions"])]

    def set_region(self, i, fields):
        h = self.header()
        struct.pack_into(REGION_FMT, self.data, h["regions_offset"] + 80 * i,
                         *fields)

    def string(self, off):
        h = self.header()
        start = h["strings_offset"] + off
        return bytes(self.data[start:self.data.index(b"\0", start)]).decode()

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.data)
        return path

    def table(self, fmt, offset_field, count_field):
        h = self.header()
        size = struct.calcsize(fmt)
        return [list(struct.unpack_from(fmt, self.data,
                                        h[offset_field] + size * i))
                for i in range(h[count_field])]

    def set_entry(self, fmt, offset_field, i, fields):
        h = self.header()
        struct.pack_into(fmt, self.data,
                         h[offset_field] + struct.calcsize(fmt) * i, *fields)


def run_tool(argv, env, timeout):
    """ckpt_restart or ckpt_inspect on a (maybe damaged) image: its
    CompletedProcess; a hang fails the test."""
    try:
        return subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("%s hung for more than %d s" % (" ".join(argv), timeout))
