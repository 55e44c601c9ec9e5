"""Tutorial 5: a tiny transformer trained with zyntax.torch.

A two-layer decoder (embedding, RMS norm, grouped-query causal attention
with rotary positions, a GELU MLP, cross-entropy) learns to continue a
repeating sequence. Every op but the GELU and the additions runs as a zyntax
kernel, forward and backward, and zyntax's AdamW takes the steps. The same
model in plain PyTorch, from the same weights, is the reference: the losses
agree step by step, and both fall. Both are timed; --steps N trains longer.

    .venv/bin/python docs/tutorials/05_transformer.py [--steps N]
"""
import argparse
import time

import torch

import zyntax.torch as zt

VOCAB, DIM, HEADS, KV_HEADS, LAYERS, SEQ, BATCH = 32, 64, 4, 2, 2, 48, 4
HEAD_DIM = DIM // HEADS


def make_weights():
    g = torch.Generator().manual_seed(1)

    def w(*shape, scale=None):
        return (torch.randn(*shape, generator=g) * (scale or shape[0] ** -0.5)).requires_grad_()

    p = {"embed": w(VOCAB, DIM, scale=0.5), "norm": torch.ones(DIM, requires_grad=True), "out": w(DIM, VOCAB)}
    for i in range(LAYERS):
        p.update({f"{i}.attn_norm": torch.ones(DIM, requires_grad=True), f"{i}.q": w(DIM, DIM),
                  f"{i}.kv": w(DIM, 2 * KV_HEADS * HEAD_DIM), f"{i}.o": w(DIM, DIM),
                  f"{i}.mlp_norm": torch.ones(DIM, requires_grad=True), f"{i}.up": w(DIM, 4 * DIM),
                  f"{i}.down": w(4 * DIM, DIM)})
    return p


def forward_zyntax(p, ids):
    x = zt.embedding(ids, p["embed"])                                   # [batch, seq, dim]
    for i in range(LAYERS):
        h = zt.rms_norm(x, p[f"{i}.attn_norm"])
        q = zt.rope(zt.matmul(h, p[f"{i}.q"]).reshape(BATCH, SEQ, HEADS, HEAD_DIM))
        k, v = zt.matmul(h, p[f"{i}.kv"]).reshape(BATCH, SEQ, 2, KV_HEADS, HEAD_DIM).unbind(2)
        a = zt.causal_attention(q, zt.rope(k), v)                       # grouped-query heads
        x = x + zt.matmul(a.reshape(BATCH, SEQ, DIM), p[f"{i}.o"])
        h = zt.rms_norm(x, p[f"{i}.mlp_norm"])
        x = x + zt.matmul(torch.nn.functional.gelu(zt.matmul(h, p[f"{i}.up"])), p[f"{i}.down"])
    return zt.matmul(zt.rms_norm(x, p["norm"]), p["out"])


# The same model in plain PyTorch.
def rms_norm(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x):
    pos = torch.arange(x.shape[-3], dtype=torch.float32)[:, None, None]
    freq = torch.exp(torch.arange(0, x.shape[-1], 2, dtype=torch.float32) / x.shape[-1] * -9.210340371976184)
    c, s = torch.cos(pos * freq), torch.sin(pos * freq)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).flatten(-2)


def attention(q, k, v):
    k = k.repeat_interleave(HEADS // KV_HEADS, dim=2)
    v = v.repeat_interleave(HEADS // KV_HEADS, dim=2)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-1, -2)) * HEAD_DIM ** -0.5
    scores = scores.masked_fill(torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1), float("-inf"))
    return (torch.softmax(scores, -1) @ v).transpose(1, 2)


def forward_torch(p, ids):
    x = p["embed"][ids]
    for i in range(LAYERS):
        h = rms_norm(x, p[f"{i}.attn_norm"])
        q = rope((h @ p[f"{i}.q"]).reshape(BATCH, SEQ, HEADS, HEAD_DIM))
        k, v = (h @ p[f"{i}.kv"]).reshape(BATCH, SEQ, 2, KV_HEADS, HEAD_DIM).unbind(2)
        x = x + attention(q, rope(k), v).reshape(BATCH, SEQ, DIM) @ p[f"{i}.o"]
        h = rms_norm(x, p[f"{i}.mlp_norm"])
        x = x + torch.nn.functional.gelu(h @ p[f"{i}.up"]) @ p[f"{i}.down"]
    return rms_norm(x, p["norm"]) @ p["out"]


def batches(steps):
    g = torch.Generator().manual_seed(2)
    pattern = torch.randint(0, VOCAB, (11,), generator=g)  # the sequence to learn: a period of 11
    for _ in range(steps):
        starts = torch.randint(0, 11, (BATCH,), generator=g)
        seqs = torch.stack([pattern[(s + torch.arange(SEQ + 1)) % 11] for s in starts])
        yield seqs[:, :-1], seqs[:, 1:]


WARM_UP = 3  # steps not timed: the first compiles the kernels (once; then from the disk cache)


class Run:
    """One model training: its weights, optimizer, losses and step times."""

    def __init__(self, forward, cross_entropy, optimizer):
        self.forward, self.cross_entropy = forward, cross_entropy
        self.p = make_weights()
        self.opt = optimizer(self.p.values(), lr=3e-3, weight_decay=0.01)
        self.losses, self.times = [], []

    def step(self, ids, targets):
        start = time.perf_counter()
        loss = self.cross_entropy(self.forward(self.p, ids).reshape(-1, VOCAB), targets.reshape(-1))
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.losses.append(loss.item())
        self.times.append(time.perf_counter() - start)

    def median_step(self):
        timed = sorted(self.times[WARM_UP:])
        return timed[len(timed) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=24)
    steps = ap.parse_args().steps
    zy = Run(forward_zyntax, zt.cross_entropy, zt.AdamW)
    pt = Run(forward_torch, torch.nn.functional.cross_entropy, torch.optim.AdamW)
    for ids, targets in batches(steps):  # the two take turns, so a slow spell of the machine falls on both
        zy.step(ids, targets)
        pt.step(ids, targets)
    for step in range(0, steps, max(1, steps // 5)):
        print("step %3d  loss %.4f (zyntax)  %.4f (torch)" % (step, zy.losses[step], pt.losses[step]))
    print("%.1f ms a step with zyntax kernels, %.1f ms in plain PyTorch (medians): %.2fx PyTorch's speed"
          % (zy.median_step() * 1e3, pt.median_step() * 1e3, pt.median_step() / zy.median_step()))
    for a, b in zip(zy.losses, pt.losses):
        assert abs(a - b) <= 2e-3 * max(1.0, abs(b)), (a, b)
    assert zy.losses[-1] < 0.7 * zy.losses[0], zy.losses
    print("trained: zyntax kernels and PyTorch agree")


if __name__ == "__main__":
    main()
