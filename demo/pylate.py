# SPDX-License-Identifier: GPL-2.0
"""The late python3.11 of make system and make systemd: a second of pure
Python, then extension modules imported only now (_bz2 with libbz2,
_lzma, _hashlib with libcrypto, _uuid with libuuid), files nothing
mapped before, used until killed."""
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


t = time.monotonic()
while time.monotonic() - t < 1:
    fib(15)
import _bz2, _lzma, _hashlib, _uuid  # noqa: E401,E402 (late, on purpose)
data = bytes(range(256)) * 64
while True:
    _bz2.BZ2Compressor(9).compress(data)
    _lzma.LZMACompressor().compress(data)
    _hashlib.openssl_sha256(data * 16).hexdigest()
    for i in range(200):
        _uuid.generate_time_safe()
