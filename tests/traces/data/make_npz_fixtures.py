#!/usr/bin/env -S /usr/bin/python3
# @brief Writes the .npz fixtures of tests/sim/select/test_select.cpp (numpy savez_compressed = deflate, savez = stored) and
# the same arrays as a directory of .npy files. Every value is exact in fp16: v = ((i % 17) - 8) / 8 over the flat index.
import os

import numpy as np

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "npz")


def pattern(shape, dtype):
    n = int(np.prod(shape))
    return (((np.arange(n) % 17) - 8) / 8.0).astype(dtype).reshape(shape)


def arrays():
    return dict(
        layers=np.array([3, 7], np.int32),
        keys=pattern((2, 40, 1, 4), np.float16),
        queries=pattern((6, 2, 2, 4), np.float16),
        seq_lens=np.arange(35, 41, dtype=np.int32),
        scaling=np.array(0.5, np.float32),
    )


os.makedirs(os.path.join(here, "kq_dir"), exist_ok=True)
np.savez_compressed(os.path.join(here, "kq_deflate.npz"), **arrays())
np.savez(os.path.join(here, "kq_stored.npz"), **arrays())
for k, v in arrays().items():
    np.save(os.path.join(here, "kq_dir", k + ".npy"), v)
