#!/usr/bin/python3
"""Tiny LM training on the CPU: examples/tiny_lm (zyntax) and the same model in
PyTorch (examples/tiny_lm/tiny_lm_torch.py), run one after the other in one
run with the same threads, steps and data; writes the "## Tiny LM training"
section of docs/performance.md.

    /usr/bin/python3 bench/compare_tiny_lm.py [--tiny-lm build/examples/tiny_lm/tiny_lm] [--steps 300]
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import performance_doc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny-lm", default=os.path.join(ROOT, "build", "examples", "tiny_lm", "tiny_lm"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"))
    args = ap.parse_args()
    ours = subprocess.run([args.tiny_lm, "--device", "cpu", "--steps", str(args.steps), "--quiet"], stdout=subprocess.PIPE,
                          check=True, text=True).stdout
    m = re.search(r"loss ([\d.]+) -> ([\d.]+) .*; (\d+) tokens/s after the first step", ours)
    if not m:
        sys.exit("unexpected tiny_lm output:\n" + ours)
    z_first, z_last, z_tps = float(m.group(1)), float(m.group(2)), float(m.group(3))
    device = re.search(r"tiny_lm on (\S+) \((.*)\): \d+ characters", ours)
    torch = json.loads(subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "tiny_lm", "tiny_lm_torch.py"),
                                       "--steps", str(args.steps), "--json"], stdout=subprocess.PIPE, check=True,
                                      text=True).stdout.strip().splitlines()[-1])
    text = "\n".join([
        "## Tiny LM training (CPU)",
        "",
        "- Machine: %s, %d logical cores, %s" % (device.group(2) if device else "?", os.cpu_count(), platform.platform()),
        "- Date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "- Model: `examples/tiny_lm` (characters of the KJV Genesis and Exodus, vocabulary 62; dim 128, 2 layers, "
        "4 query / 2 key-value heads of 32, SwiGLU 384, RoPE, RMSNorm, tied head; AdamW 3e-3), one sequence of 256 "
        "tokens per step, %d steps; the same model, data and settings in PyTorch %s eager on %d threads, "
        "run just after it. tokens/s after the first step (which compiles or loads the kernels)." % (
            args.steps, torch["torch"], torch["threads"]),
        "",
        "| | loss (first → last step) | tokens/s | vs PyTorch |",
        "|---|---|---|---|",
        "| zyntax (`cpu`) | %.3f → %.3f | %.0f | %.2f× |" % (z_first, z_last, z_tps, z_tps / torch["tokens_per_s"]),
        "| PyTorch | %.3f → %.3f | %.0f | 1.00× |" % (torch["first_loss"], torch["last_loss"], torch["tokens_per_s"]),
        "",
        "Target: at least as fast as PyTorch on the CPU.",
        ""])
    print(text)
    performance_doc.replace_sections(args.out, ["Tiny LM training"], text)


if __name__ == "__main__":
    main()
