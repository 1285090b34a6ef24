# SPDX-License-Identifier: LGPL-2.1-or-later
"""protocol/client_sha256.c against Python's hashlib/hmac: SHA-256 and
HMAC-SHA256 of messages around the 55/56/64-byte padding edges and keys
shorter than, equal to and longer than a block."""

import hashlib
import hmac
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "auth.h"

static size_t unhex(const char *s, unsigned char *out)
{
	size_t n = strlen(s) / 2;

	for (size_t i = 0; i < n; i++)
		sscanf(s + 2 * i, "%2hhx", &out[i]);
	return n;
}

static void put(const unsigned char *d)
{
	for (int i = 0; i < CKPT_SHA256_LEN; i++)
		printf("%02x", d[i]);
	printf("\n");
}

int main(int argc, char **argv)
{
	static unsigned char key[4096], msg[1 << 16];
	unsigned char out[CKPT_SHA256_LEN];
	struct ckpt_sha256 s;
	struct ckpt_hmac h;

	for (int i = 1; i + 1 < argc; i += 2) {
		size_t kl = unhex(argv[i], key), ml = unhex(argv[i + 1], msg);

		ckpt_sha256_init(&s);
		/* in two pieces: the split must not matter */
		ckpt_sha256_update(&s, msg, ml / 3);
		ckpt_sha256_update(&s, msg + ml / 3, ml - ml / 3);
		ckpt_sha256_final(&s, out);
		put(out);
		ckpt_hmac_init(&h, key, kl);
		ckpt_hmac_update(&h, msg, ml);
		ckpt_hmac_final(&h, out);
		put(out);
	}
	return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    d = tmp_path_factory.mktemp("sha")
    src, exe = d / "driver.c", d / "driver"
    src.write_text(DRIVER)
    r = subprocess.run(
        ["cc", "-O2", "-Wall", "-Werror", "-I", os.path.join(ROOT, "include"),
         "-I", os.path.join(ROOT, "protocol"), str(src),
         os.path.join(ROOT, "protocol", "client_sha256.c"), "-o",
         str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return str(exe)


def test_sha256_and_hmac_match_hashlib(driver):
    cases = [(b"", b""), (b"key", b"The quick brown fox jumps over the "
                          b"lazy dog"), (b"k" * 64, b"a" * 55),
             (b"k" * 65, b"a" * 56), (os.urandom(131), b"a" * 63),
             (os.urandom(32), b"b" * 64), (os.urandom(7), b"c" * 65),
             (os.urandom(32), os.urandom(1000)),
             (os.urandom(200), os.urandom(20000))]
    argv = [driver]
    for k, m in cases:
        argv += [k.hex(), m.hex()]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = r.stdout.split()
    want = []
    for k, m in cases:
        want += [hashlib.sha256(m).hexdigest(),
                 hmac.new(k, m, hashlib.sha256).hexdigest()]
    assert got == want
    # FIPS 180-2 "abc" and RFC 4231 test case 2, spelled out
    r = subprocess.run([driver, b"Jefe".hex(),
                        b"what do ya want for nothing?".hex(), "",
                        b"abc".hex()], capture_output=True, text=True,
                       timeout=60)
    out = r.stdout.split()
    assert out[1] == ("5bdcc146bf60754e6a042426089575c7"
                      "5a003f089d2739839dec58b964ec3843")
    assert out[2] == ("ba7816bf8f01cfea414140de5dae2223"
                      "b00361a396177a9cb410ff61f20015ad")
