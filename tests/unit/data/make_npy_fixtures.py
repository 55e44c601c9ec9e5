#!/usr/bin/env python3
"""Writes the small .npy files the runtime unit tests read.

Run from any directory with a Python that has NumPy:
    python3 tests/unit/data/make_npy_fixtures.py
The expected values in tests/unit/test_runtime_npy.cpp are written out by
hand from the arrays below.
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(HERE, name)


def main():
    # Supported dtypes, little-endian, version 1.0.
    np.save(path("f32_2x3.npy"), np.array([[1.5, -2.0, 3.25], [0.0, 1e-3, -7.0]], dtype="<f4"))
    np.save(path("f64_vec.npy"), np.array([0.1, -0.0, 1e300], dtype="<f8"))
    np.save(path("i32_vec.npy"), np.array([-2147483648, 0, 2147483647, 42], dtype="<i4"))
    np.save(path("i64_3x1.npy"), np.array([[-9223372036854775808], [1], [9223372036854775807]], dtype="<i8"))
    np.save(path("u8_vec.npy"), np.array([0, 1, 128, 255], dtype="u1"))
    np.save(path("bool_2x2.npy"), np.array([[True, False], [False, True]]))
    np.save(path("f32_scalar.npy"), np.array(2.5, dtype="<f4"))
    np.save(path("f64_empty_0x3.npy"), np.zeros((0, 3), dtype="<f8"))

    # Big-endian data must be byte-swapped on load.
    np.save(path("f64_big_endian.npy"), np.array([1.0, -2.5, 1024.125], dtype=">f8"))
    np.save(path("i32_big_endian.npy"), np.array([[1, -2], [65536, 7]], dtype=">i4"))

    # Header format versions 2.0 and 3.0 (4-byte header length).
    arr = np.array([[1, 2, 3], [4, 5, 6]], dtype="<i8")
    for version in ((2, 0), (3, 0)):
        with open(path("i64_v%d.npy" % version[0]), "wb") as f:
            np.lib.format.write_array(f, arr, version=version)

    # Rejected files.
    np.save(path("f32_fortran.npy"), np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
    np.save(path("c64_unsupported.npy"), np.array([1 + 2j, 3 - 4j], dtype="<c8"))
    # Ten f32 values (40 data bytes) with the last 6 bytes cut off.
    np.save(path("f32_truncated.npy"), np.arange(10, dtype="<f4"))
    with open(path("f32_truncated.npy"), "rb") as f:
        full = f.read()
    with open(path("f32_truncated.npy"), "wb") as f:
        f.write(full[:-6])

    # Archives: stored (np.savez) and deflated (np.savez_compressed), and f16.
    np.savez(path("stored.npz"), weights=np.arange(6, dtype="<f4").reshape(2, 3), ids=np.array([7, -1], dtype="<i8"))
    np.savez_compressed(path("deflated.npz"), half=np.array([0.5, -2, 65504], dtype="<f2"),
                        small=np.arange(4, dtype="<u2"))
    np.save(path("f16_vec.npy"), np.array([1.5, -0.25, 65504, 6e-8], dtype="<f2"))


if __name__ == "__main__":
    main()
