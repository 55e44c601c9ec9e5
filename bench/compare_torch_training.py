#!/usr/bin/python3
"""Training from PyTorch: the tiny transformer of docs/tutorials/05_transformer.py
trained with zyntax.torch (every op but the GELU and the additions a zyntax
kernel, forward and backward; zyntax's AdamW) and the same model in plain
PyTorch, the two taking turns step by step in one process. Several rounds
from fresh weights; the median step of each side in each round. Writes the
"## Training from PyTorch" section of docs/performance.md.

    PYTHONPATH=build/python /usr/bin/python3 bench/compare_torch_training.py [--rounds 3] [--steps 30]
"""
import argparse
import importlib.util
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
import performance_doc  # noqa: E402
import zyntax.torch as zt  # noqa: E402

spec = importlib.util.spec_from_file_location("tutorial", os.path.join(ROOT, "docs", "tutorials", "05_transformer.py"))
tutorial = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tutorial)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    results = []
    for r in range(args.rounds):
        zy = tutorial.Run(tutorial.forward_zyntax, zt.cross_entropy, zt.AdamW)
        pt = tutorial.Run(tutorial.forward_torch, torch.nn.functional.cross_entropy, torch.optim.AdamW)
        for ids, targets in tutorial.batches(args.steps):
            zy.step(ids, targets)
            pt.step(ids, targets)
        worst = max(abs(a - b) for a, b in zip(zy.losses, pt.losses))
        results.append((zy.median_step(), pt.median_step(), worst))
        print("round %d: %.1f ms zyntax, %.1f ms torch, %.2fx; losses differ by at most %.1e"
              % (r, zy.median_step() * 1e3, pt.median_step() * 1e3, pt.median_step() / zy.median_step(), worst))
    t = tutorial
    lines = [
        "## Training from PyTorch",
        "",
        *performance_doc.machine_lines(),
        "- `bench/compare_torch_training.py`: the tiny transformer of docs/tutorials/05_transformer.py (%d layers, "
        "dim %d, %d heads over %d key/value heads, sequence %d, batch %d, vocabulary %d) trained with `zyntax.torch` "
        "(embedding, RMS norm, rope, grouped-query causal attention, matmul, cross-entropy and AdamW as zyntax "
        "kernels, forward and backward; torch's GELU and additions between them) and the same model in plain "
        "PyTorch %s from the same weights, taking turns step by step; the median step after %d warm-up steps, "
        "%d steps a round." % (t.LAYERS, t.DIM, t.HEADS, t.KV_HEADS, t.SEQ, t.BATCH, t.VOCAB, torch.__version__,
                                t.WARM_UP, args.steps),
        "",
        "| round | zyntax.torch ms/step | PyTorch ms/step | speed vs PyTorch | largest loss difference |",
        "|---|---|---|---|---|",
    ]
    for i, (z, p, worst) in enumerate(results):
        lines.append("| %d | %.1f | %.1f | %.2f× | %.1e |" % (i, z * 1e3, p * 1e3, p / z, worst))
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        performance_doc.replace_sections(os.path.join(ROOT, "docs", "performance.md"), ["Training from PyTorch"], text)


if __name__ == "__main__":
    main()
