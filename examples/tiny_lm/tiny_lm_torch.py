#!/usr/bin/python3
"""The tiny_lm model in PyTorch on the CPU, for comparison: the same text,
tokenizer, architecture (embedding, RoPE, causal attention with grouped-query
heads, RMSNorm, SwiGLU, tied head), initialisation scales, AdamW settings,
sequence length and number of steps. Prints the loss and tokens/s after the
first step, as tiny_lm does; --json prints one JSON line instead.

    /usr/bin/python3 examples/tiny_lm/tiny_lm_torch.py [--steps 300] [--threads N] [--json]
"""
import argparse
import json
import math
import os
import random
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DIM, LAYERS, HEADS, KV_HEADS, HEAD_DIM, HIDDEN, SEQ = 128, 2, 4, 2, 32, 384, 256
LR, WD, EPS = 3e-3, 0.01, 1e-5


def rms_norm(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS) * w


def rope(x, heads):
    t = torch.arange(x.shape[0], dtype=torch.float32)[:, None]
    freq = torch.pow(10000.0, -torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM)
    angle = t * freq  # [seq, hd/2]
    c, s = torch.cos(angle)[:, None, :], torch.sin(angle)[:, None, :]
    x = x.view(x.shape[0], heads, HEAD_DIM // 2, 2)
    x0, x1 = x[..., 0], x[..., 1]
    return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).view(x.shape[0], heads * HEAD_DIM)


class TinyLM(torch.nn.Module):
    def __init__(self, vocab):
        super().__init__()
        g = torch.Generator().manual_seed(1)

        def p(*shape, scale):
            return torch.nn.Parameter(torch.randn(*shape, generator=g) * scale)
        self.emb = p(vocab, DIM, scale=0.02)
        self.layers = torch.nn.ModuleList()
        for _ in range(LAYERS):
            layer = torch.nn.Module()
            layer.norm1 = torch.nn.Parameter(torch.ones(DIM))
            layer.wq = p(DIM, HEADS * HEAD_DIM, scale=DIM ** -0.5)
            layer.wk = p(DIM, KV_HEADS * HEAD_DIM, scale=DIM ** -0.5)
            layer.wv = p(DIM, KV_HEADS * HEAD_DIM, scale=DIM ** -0.5)
            layer.wo = p(HEADS * HEAD_DIM, DIM, scale=(HEADS * HEAD_DIM) ** -0.5)
            layer.norm2 = torch.nn.Parameter(torch.ones(DIM))
            layer.gate = p(DIM, HIDDEN, scale=DIM ** -0.5)
            layer.up = p(DIM, HIDDEN, scale=DIM ** -0.5)
            layer.down = p(HIDDEN, DIM, scale=HIDDEN ** -0.5)
            self.layers.append(layer)
        self.norm_f = torch.nn.Parameter(torch.ones(DIM))

    def forward(self, ids):
        n = ids.shape[0]
        h = self.emb[ids]
        mask = torch.full((n, n), float("-inf")).triu(1)
        for L in self.layers:
            a = rms_norm(h, L.norm1)
            q = rope(a @ L.wq, HEADS).view(n, HEADS, HEAD_DIM).transpose(0, 1)
            k = rope(a @ L.wk, KV_HEADS).view(n, KV_HEADS, HEAD_DIM).transpose(0, 1)
            v = (a @ L.wv).view(n, KV_HEADS, HEAD_DIM).transpose(0, 1)
            k = k.repeat_interleave(HEADS // KV_HEADS, dim=0)
            v = v.repeat_interleave(HEADS // KV_HEADS, dim=0)
            s = q @ k.transpose(1, 2) / math.sqrt(HEAD_DIM) + mask
            att = (torch.softmax(s, dim=-1) @ v).transpose(0, 1).reshape(n, HEADS * HEAD_DIM)
            h = h + att @ L.wo
            b = rms_norm(h, L.norm2)
            h = h + (F.silu(b @ L.gate) * (b @ L.up)) @ L.down
        return rms_norm(h, self.norm_f) @ self.emb.T


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    text = open(os.path.join(HERE, "data", "kjv_genesis_exodus.txt"), encoding="latin-1").read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    model = TinyLM(len(chars))
    decay = [p for n, p in model.named_parameters() if "norm" not in n]
    no_decay = [p for n, p in model.named_parameters() if "norm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=LR, betas=(0.9, 0.95), eps=1e-8)
    rng = random.Random(1)
    first = last = None
    warm = None
    for step in range(1, args.steps + 1):
        s = rng.randrange(0, len(ids) - SEQ - 1)
        x, y = ids[s:s + SEQ], ids[s + 1:s + SEQ + 1]
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        last = loss.item()
        if step == 1:
            first = last
            warm = time.perf_counter()
    seconds = time.perf_counter() - warm
    tps = (args.steps - 1) * SEQ / seconds if args.steps > 1 else 0.0
    if args.json:
        print(json.dumps({"first_loss": first, "last_loss": last, "tokens_per_s": tps, "torch": torch.__version__,
                          "threads": torch.get_num_threads()}))
    else:
        print("PyTorch %s, %d threads: loss %.3f -> %.3f in %d steps; %.0f tokens/s after the first step" % (
            torch.__version__, torch.get_num_threads(), first, last, args.steps, tps))


if __name__ == "__main__":
    main()
