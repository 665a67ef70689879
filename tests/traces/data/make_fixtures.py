#!/usr/bin/env -S /usr/bin/python3
# @brief Regenerates the numpy-written fixtures of the trace tests (run from this directory; numpy 1.24 layout).
import json
import numpy as np

# Request 3: int64 positions in score order with -1 padding at the end and, at step 2, in the middle.
topk = np.array([
    [[5, 1, 3, -1], [0, 2, -1, -1]],
    [[1, 5, 6, 3], [2, 0, 6, -1]],
    [[7, -1, 1, 5], [-1, -1, -1, -1]],
], dtype=np.int64)
np.save("npy_numpy/req_3_topk.npy", topk)
np.save("npy_numpy/req_3_seq_lens.npy", np.array([6, 7, 8], dtype=np.int64))
# Request 10: one step, sorted.
np.save("npy_numpy/req_10_topk.npy", np.array([[[0, 1, 2, 3], [4, 5, 6, 7]]], dtype=np.int64))
np.save("npy_numpy/req_10_seq_lens.npy", np.array([9], dtype=np.int64))
with open("npy_numpy/meta.json", "w") as f:
    json.dump({"initial_state": "empty", "top_k": 4}, f)
    f.write("\n")
