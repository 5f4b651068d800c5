#!/usr/bin/python3
"""The .npy layouts numpy writes besides C-order little-endian, for tests/io/test_npy.cpp.

Writes tests/fixtures/npy_layout_*.npy, each holding the same 3 x 4 values
  a[i, j] = (i + 1) + (j + 1) / 8 - 1.5 * (i == j)
in another layout, and npy_layout_c.npy (C order, '<f8') as the reference:
  npy_layout_fortran.npy    np.asfortranarray(a), fortran_order True
  npy_layout_big_f4.npy     a.astype('>f4'), big-endian float32
  npy_layout_big_f8_fortran.npy  big-endian float64, Fortran order
  npy_layout_v2.npy         format version 2.0 (4-byte header length), '<f4'
  npy_layout_vector.npy     a[0] (shape (4,)), and npy_layout_scalar.npy np.float64(2.5) (0-D)
Run: /usr/bin/python3 python/make_fixture_npy_layouts.py
"""
import os

import numpy as np
from numpy.lib import format as npformat

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def main():
    i, j = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    a = (i + 1) + (j + 1) / 8 - 1.5 * (i == j)
    np.save(os.path.join(OUT, "npy_layout_c.npy"), a.astype("<f8"))
    np.save(os.path.join(OUT, "npy_layout_fortran.npy"), np.asfortranarray(a))
    np.save(os.path.join(OUT, "npy_layout_big_f4.npy"), a.astype(">f4"))
    np.save(os.path.join(OUT, "npy_layout_big_f8_fortran.npy"), np.asfortranarray(a.astype(">f8")))
    with open(os.path.join(OUT, "npy_layout_v2.npy"), "wb") as f:
        npformat.write_array(f, a.astype("<f4"), version=(2, 0))
    np.save(os.path.join(OUT, "npy_layout_vector.npy"), a[0])
    np.save(os.path.join(OUT, "npy_layout_scalar.npy"), np.float64(2.5))
    for name in sorted(os.listdir(OUT)):
        if name.startswith("npy_layout_"):
            back = np.load(os.path.join(OUT, name))
            print(name, back.dtype, back.shape, "fortran" if back.flags.f_contiguous and back.ndim == 2 else "")


if __name__ == "__main__":
    main()
