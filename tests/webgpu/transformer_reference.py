"""The transformer block of examples/transformer_block.zynml in NumPy (f64),
for tests/webgpu/test_page.mjs: reads {"x": [...], "w": {...}, "sizes": {...}}
as JSON on standard input, writes the block's output as a JSON list."""
import json
import sys

import numpy as np


def layer_norm(v, weight, bias):
    mean = v.mean(axis=-1, keepdims=True)
    var = (v * v).mean(axis=-1, keepdims=True) - mean * mean
    return (v - mean) / np.sqrt(var + 1e-6) * weight + bias


def main():
    a = json.load(sys.stdin)
    s = a["sizes"]
    b, n, h, heads, f = s["batch"], s["seq"], s["hidden"], s["heads"], s["ffn"]
    d = h // heads
    w = {k: np.array(v, dtype=np.float64) for k, v in a["w"].items()}
    x = np.array(a["x"], dtype=np.float64).reshape(b, n, h)
    qkv = x @ w["qkv_proj"].reshape(h, 3 * h)
    q, k, v = (p.reshape(b, n, heads, d).transpose(0, 2, 1, 3) for p in np.split(qkv, 3, axis=-1))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    attn = (scores / scores.sum(axis=-1, keepdims=True)) @ v
    attn = attn.transpose(0, 2, 1, 3).reshape(b, n, h)
    normed = layer_norm(x + attn @ w["out_proj"].reshape(h, h), w["ln1_weight"], w["ln1_bias"])
    up = normed @ w["ffn_up"].reshape(h, f)
    up = up * 0.5 * (1.0 + np.tanh(0.7978845608 * (up + 0.044715 * up ** 3)))
    out = layer_norm(normed + up @ w["ffn_down"].reshape(f, h), w["ln2_weight"], w["ln2_bias"])
    json.dump(out.reshape(-1).tolist(), sys.stdout)


if __name__ == "__main__":
    main()
