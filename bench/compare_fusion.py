#!/usr/bin/python3
"""Fusion across compute blocks: programs written as a chain of blocks,
run with fusion on and off, against the same arithmetic written as one
block, on each device given; one zyntax process per form, one after the
other in one run. Writes the "## Fusion across blocks" section of
docs/performance.md.

    /usr/bin/python3 bench/compare_fusion.py [--zyntax build/zyntax] [--devices cpu,vulkan:0] [--repeat 3]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import performance_doc  # noqa: E402

# Each case: its input, the chain of blocks (a function of x), and the one
# block computing the same; N and M are substituted.
ELEMENTWISE = {
    "title": "three element-wise blocks, 16M f32 (scale and shift, tanh, times the input)",
    "setup": "let x = rand([N])",
    "chain": """def f(x: tensor[n, f32]) {
    let a = compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = x[i] * 1.5 + 0.25
    }
    let b = compute(a) {
        @kernel elementwise
        for i in 0..n:
            out[i] = tanh(a[i])
    }
    let c = compute(b, x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = b[i] * x[i]
    }
    return c
}""",
    "one": """def f(x: tensor[n, f32]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = tanh(x[i] * 1.5 + 0.25) * x[i]
    }
}""",
    "sizes": {"N": 16 * 1024 * 1024},
}
SOFTMAX = {
    "title": "row softmax, 4096×1024 f32, as four blocks (max, exp, sum, divide)",
    "setup": "let x = randn([M, N])",
    "chain": """def f(x: tensor[m, n, f32]) {
    let mx = compute(x) {
        @kernel reduce(max, axis=1)
        for i in 0..m, j in 0..n:
            yield x[i, j]
    }
    let e = compute(x, mx) {
        @kernel elementwise
        for i in 0..m, j in 0..n:
            out[i, j] = exp(x[i, j] - mx[i])
    }
    let s = compute(e) {
        @kernel reduce(+, axis=1)
        for i in 0..m, j in 0..n:
            yield e[i, j]
    }
    let y = compute(e, s) {
        @kernel elementwise
        for i in 0..m, j in 0..n:
            out[i, j] = e[i, j] / s[i]
    }
    return y
}""",
    "one": """def f(x: tensor[m, n, f32]) {
    return compute(x) {
        for i in 0..m:
            var mx = -inf
            for j in 0..n:
                mx = max(mx, x[i, j])
            var s = 0.0
            for j in 0..n:
                s += exp(x[i, j] - mx)
            for j in 0..n:
                out[i, j] = exp(x[i, j] - mx) / s
    }
}""",
    "sizes": {"M": 4096, "N": 1024},
}
EPILOGUE = {
    "title": "a matrix product, then a bias and ReLU block, 512×512×512 f32",
    "setup": "let x = randn([N, N])\nlet w = randn([N, N])\nlet b = randn([N])",
    "chain": """def f(x: tensor[m, k, f32], w: tensor[k, n, f32], b: tensor[n, f32]) {
    let h = compute(x, w) {
        for i in 0..m, j in 0..n:
            var s = 0.0
            for kk in 0..k:
                s += x[i, kk] * w[kk, j]
            out[i, j] = s
    }
    let y = compute(h, b) {
        @kernel elementwise
        for i in 0..m, j in 0..n:
            out[i, j] = max(h[i, j] + b[j], 0.0)
    }
    return y
}""",
    "one": """def f(x: tensor[m, k, f32], w: tensor[k, n, f32], b: tensor[n, f32]) {
    return compute(x, w, b) {
        for i in 0..m, j in 0..n:
            var s = 0.0
            for kk in 0..k:
                s += x[i, kk] * w[kk, j]
            out[i, j] = max(s + b[j], 0.0)
    }
}""",
    "sizes": {"N": 512},
    "call": "f(x, w, b)",
}
LAYERS = {
    "title": "the three element-wise blocks as three functions (a layer per function), 16M f32",
    "setup": "let x = rand([N])",
    "chain": """def scale(x: tensor[n, f32], s: float, t: float) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = x[i] * s + t
    }
}
def act(x: tensor[n, f32]) {
    return compute(x) {
        @kernel elementwise
        for i in 0..n:
            out[i] = tanh(x[i])
    }
}
def mul(x: tensor[n, f32], y: tensor[n, f32]) {
    return compute(x, y) {
        @kernel elementwise
        for i in 0..n:
            out[i] = x[i] * y[i]
    }
}
def f(x: tensor[n, f32]) {
    return mul(act(scale(x, 1.5, 0.25)), x)
}""",
    "one": ELEMENTWISE["one"],
    "sizes": {"N": 16 * 1024 * 1024},
}
CASES = [ELEMENTWISE, LAYERS, SOFTMAX, EPILOGUE]

TIMER = """
let warm = CALL
var best = 1e30
for r in 0..REPEAT {
    let t0 = time()
    let y = CALL
    let t = time() - t0
    if t < best {
        best = t
    }
}
print("ms", best * 1000.0)
"""


def run_form(zyntax, case, form, device, fusion, repeat):
    src = case["setup"] + "\n" + case[form] + "\n" + TIMER.replace("REPEAT", str(repeat)).replace("CALL", case.get("call", "f(x)"))
    src = re.sub(r"\b(N|M)\b", lambda m: str(case["sizes"][m.group(1)]), src)
    with tempfile.NamedTemporaryFile("w", suffix=".zynml", delete=False) as f:
        f.write(src)
    try:
        p = subprocess.run([zyntax, "run", f.name, "--device", device, "--fusion", fusion], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=1200)
    finally:
        os.unlink(f.name)
    m = re.search(r"ms ([\d.e+-]+)", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit("%s %s on %s failed:\n%s%s" % (case["title"], form, device, p.stdout, p.stderr))
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zyntax", default=os.path.join(ROOT, "build", "zyntax"))
    ap.add_argument("--tiny-lm", default=os.path.join(ROOT, "build", "examples", "tiny_lm", "tiny_lm"))
    ap.add_argument("--devices", default="cpu,vulkan:0")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--processes", type=int, default=7, help="processes per form on CPU devices (the best counts)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance.md"))
    args = ap.parse_args()
    listed = subprocess.run([args.zyntax, "devices"], stdout=subprocess.PIPE, text=True).stdout
    devices = [d for d in args.devices.split(",") if re.search(r"(?m)^" + re.escape(d) + r"\t", listed)]
    rows = []
    for device in devices:
        for case in CASES:
            # The best of several processes, the forms interleaved: this
            # machine's memory bandwidth varies from one second to the next.
            one, fused, unfused = float("inf"), float("inf"), float("inf")
            for _ in range(args.processes if device.startswith("cpu") else 1):
                one = min(one, run_form(args.zyntax, case, "one", device, "on", args.repeat))
                fused = min(fused, run_form(args.zyntax, case, "chain", device, "on", args.repeat))
                unfused = min(unfused, run_form(args.zyntax, case, "chain", device, "off", args.repeat))
            rows.append("| `%s` | %s | %.1f | %.1f (%.2f×) | %.1f (%.2f×) |" % (
                device, case["title"], one, fused, fused / one, unfused, unfused / one))
            print(rows[-1], flush=True)
    launches = []
    for fusion in ("off", "on"):
        p = subprocess.run([args.zyntax, "run", os.path.join(ROOT, "examples", "transformer_block.zynml"), "--device", "cpu",
                            "--fusion", fusion, "--profile"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        rows_ = [l.split() for l in p.stderr.splitlines() if re.match(r"^\s+\S+\s+cpu\s+\d+", l)]
        launches.append((len(rows_), sum(int(r[2]) for r in rows_)))
    # The op library's deferred ops, counted by the program itself.
    tiny = []
    for fusion in ("off", "on"):
        p = subprocess.run([args.tiny_lm, "--device", "cpu", "--steps", "3", "--quiet", "--fusion", fusion],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        m = re.search(r"kernels launched: (\d+) per training step, (\d+) per forward pass", p.stdout)
        if p.returncode != 0 or not m:
            sys.exit("tiny_lm --fusion %s failed:\n%s%s" % (fusion, p.stdout, p.stderr))
        tiny.append((int(m.group(1)), int(m.group(2))))
    text = "\n".join([
        "## Fusion across blocks",
        "",
        *performance_doc.machine_lines(),
        "- `bench/compare_fusion.py`: each program run in its own process, the best of %d calls after a first "
        "(which compiles), the best of %d such processes on CPU devices (the forms interleaved); the chain of "
        "blocks with fusion on (the default) and off (`--fusion=off`), against the same arithmetic written as one "
        "block, side by side in one run. Ratios are to the one-block form." % (args.repeat, args.processes),
        "",
        "| device | program | one block (ms) | blocks, fused (ms) | blocks, `--fusion=off` (ms) |",
        "|---|---|---|---|---|",
    ] + rows + [
        "",
        "Target: every chain within 1.25× of its one-block form. The softmax chain fuses into one row kernel "
        "on every device; on the CPU it keeps the sum reduction's f64 accumulator (the reduction's semantics), "
        "where the one-block form sums in f32: its rows keep each exp in the output for the divide "
        "(`reuse_row_values`) and sum two vectors at a time (`vectorize_wide_sums`), which brought it from 1.84× "
        "to within the target. " + ("On `cuda:0` a call's time is mostly the host's input going to the GPU, so the "
                                     "ratios there say little about the kernels." if any(d.startswith("cuda") for d in devices)
                                     else "No CUDA GPU was in this run."),
        "",
        "`examples/transformer_block.zynml` on `cpu`: %d kernels, %d launches with `--fusion=off`; %d kernels, "
        "%d launches with fusion (its blocks are fused by hand already; its products feed layer norms that "
        "read them twice per row, which recomputing would cost a dot product each). `examples/tiny_lm` (the op "
        "library through the C++ API, its ops deferred and fused): %d kernels per training step and %d per "
        "forward pass with `--fusion off`, %d and %d with fusion: every intermediate of its forward pass is kept "
        "for the backward pass, and the ops that read one (rope, attention, the products after a norm) read it "
        "at other elements than it was written, so none is computed inside its reader; a product followed by "
        "its bias (`bias_add`) is one kernel (tests/api/test_api_fusion.cpp)." % (
            launches[0][0], launches[0][1], launches[1][0], launches[1][1], tiny[0][0], tiny[0][1], tiny[1][0], tiny[1][1]),
        ""])
    print(text)
    performance_doc.replace_sections(args.out, ["Fusion across blocks"], text)


if __name__ == "__main__":
    main()
