#!/usr/bin/python3
"""Writes the small, hand-built attention layer behind docs/images/heatmap.png (see docs/HEATMAP.md).

    /usr/bin/python3 docs/example/make_example.py      # needs numpy; writes the files beside this script

One sentence of 8 tokens (the last one padding), E = 16, H = 4 (head dim 4). The weights are set by
hand, not trained, so that each head does one recognisable thing:
    head 1  attends to the first token <s>        (its query bias meets a "this is <s>" key feature)
    head 2  attends to the previous token         (keys and queries are sinusoidal positions, the
                                                   queries shifted back by one position)
    head 3  attends to earlier copies of the same word (4-d word codes; "the" appears twice)
    head 4  attends uniformly                     (a zero query projection: all scores equal)
Input features: [0] 1 for <s>; [1:5] cos/sin of the position at two frequencies; [5:9] the word's
code (+-2 along one axis, so different words score 0 or less); [9:16] small noise.
"""
import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENS = ["<s>", "the", "cat", "sat", "on", "the", "mat", "<pad>"]
E, H, D, L = 16, 4, 4, len(TOKENS)
THETA = 2 * np.pi / 16


def positions(i):
    return np.array([np.cos(THETA * i), np.sin(THETA * i), np.cos(2 * THETA * i), np.sin(2 * THETA * i)])


def inputs(rng):
    words = sorted(set(TOKENS), key=TOKENS.index)
    codes = {w: 2.0 * (1 - 2 * (k % 2)) * np.eye(4)[k // 2] for k, w in enumerate(words)}
    x = np.zeros((1, L, E), np.float32)
    for i, w in enumerate(TOKENS):
        x[0, i, 0] = 1.0 if i == 0 else 0.0
        x[0, i, 1:5] = positions(i)
        x[0, i, 5:9] = codes[w]
        x[0, i, 9:] = 0.1 * rng.standard_normal(E - 9)
    return x


def rotation(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, s], [-s, c]])  # maps (cos a, sin a) to (cos(a - angle), sin(a - angle))


def weights(rng):
    wq, wk, bq = np.zeros((E, E)), np.zeros((E, E)), np.zeros(E)
    bq[0], wk[0, 0] = 12.0, 1.0                                   # head 1: <s>
    shift = np.zeros((4, 4))
    shift[0:2, 0:2], shift[2:4, 2:4] = rotation(THETA), rotation(2 * THETA)
    wq[4:8, 1:5], wk[4:8, 1:5] = 4.0 * shift, 4.0 * np.eye(4)    # head 2: previous position
    wq[8:12, 5:9], wk[8:12, 5:9] = 1.2 * np.eye(4), 1.2 * np.eye(4)  # head 3: same word
    wv = 0.3 * rng.standard_normal((E, E))                        # head 4: wq rows 12..15 stay 0
    return {
        "in_proj_weight": np.concatenate([wq, wk, wv]).astype(np.float32),
        "in_proj_bias": np.concatenate([bq, np.zeros(2 * E)]).astype(np.float32),
        "out_proj.weight": (0.3 * rng.standard_normal((E, E))).astype(np.float32),
        "out_proj.bias": np.zeros(E, np.float32),
    }


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = np.ascontiguousarray(t, "<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    rng = np.random.default_rng(7)
    np.save(os.path.join(HERE, "query.npy"), inputs(rng))
    np.save(os.path.join(HERE, "key_padding_mask.npy"), np.array([[t == "<pad>" for t in TOKENS]]))
    write_safetensors(os.path.join(HERE, "layer.safetensors"), weights(rng))
    with open(os.path.join(HERE, "tokens.txt"), "w") as f:
        f.write("\n".join(TOKENS) + "\n")


if __name__ == "__main__":
    main()
