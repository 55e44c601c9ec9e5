#!/usr/bin/python3
"""Fusion across compute blocks against the blocks run one by one: random
runs of blocks (element-wise maps, broadcasts, reductions over rows and
over columns, scatter updates, matrix products, f16 and i32 intermediates,
reads at other indices, several consumers of one result, quiet host code
between blocks whose numbers later blocks read, blocks in functions of
their own, host code with an effect between blocks, odd sizes), each
program run with --fusion on and off on every device here, and on the
reference executor. Fused and unfused results must be the same bytes on
each device; where a program sums floats, a reduction fused into its rows
may add in another order than the unfused kernel's schedule, so those
compare within 1e-5 relative. Every device agrees with the reference within
the tolerance of its math functions (but for programs with an f16 or i32
intermediate, whose rounding a last-bit difference of tanh or exp upstream
may flip: those are compared fused against unfused only).

    /usr/bin/python3 tests/fusion/random_blocks.py [--zyntax build/zyntax] [--programs 30] [--seed 1]
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Program:
    def __init__(self, rng):
        self.rng = rng
        self.R = rng.choice([1, 3, 7, 17, 33, 64])
        self.C = rng.choice([1, 5, 16, 19, 40]) if rng.random() < 0.7 else self.R
        self.lines = []
        self.values = []  # (name, kind: "RC" | "R" | "C", dtype)
        self.read = set()
        self.float_sum = False
        self.narrowed = False  # an f16 or i32 intermediate: a 1-ulp difference upstream may flip its rounding
        self.fusable_somewhere = False
        self.hosts = []  # host numbers quiet host code between blocks computed

    def ref(self, v, at="ij"):
        name, kind, dtype = v
        self.read.add(name)
        idx = {"RC": "[i, j]", "R": "[i]", "C": "[j]"}[kind]
        if kind == "RC" and at == "ji":
            idx = "[j, i]"
        if kind == "RC" and at == "shift":
            idx = "[i, (j + 1) % C]".replace("C", str(self.C))
        text = name + idx
        return text if dtype == "f32" else "f32(%s)" % text

    def expr(self, depth=0):
        r = self.rng
        if depth > 2 or r.random() < 0.3:
            pick = r.choice(self.values)
            at = "ij"
            if pick[1] == "RC" and r.random() < 0.1:
                at = "shift"
            if pick[1] == "RC" and self.R == self.C and r.random() < 0.1:
                at = "ji"
            if self.hosts and r.random() < 0.15:
                return "(%s * %s)" % (self.ref(pick, at), r.choice(self.hosts))
            return self.ref(pick, at) if r.random() < 0.85 else repr(round(r.uniform(-2, 2), 2))
        a, b = self.expr(depth + 1), self.expr(depth + 1)
        op = r.choice(["+", "-", "*", "max", "min", "tanh", "exp", "abs", "sqrt", "select"])
        if op in "+-*":
            return "(%s %s %s)" % (a, op, b)
        if op in ("max", "min"):
            return "%s(%s, %s)" % (op, a, b)
        if op == "exp":
            return "exp(-abs(%s))" % a
        if op == "sqrt":
            return "sqrt(abs(%s) + 1.0)" % a
        if op == "select":
            return "select(%s > %s, %s, %s)" % (a, b, a, b)
        return "%s(%s)" % (op, a)

    def block(self, name, last):
        r = self.rng
        R, C = self.R, self.C
        kinds = ["map", "map", "rowred", "colred", "cast", "scatter"] + (["matmul"] if R == C else [])
        kind = "map" if last else r.choice(kinds)
        # Prefer reading the latest results: chains and graphs of blocks.
        e = self.expr()
        latest = [v for v in self.values if v[0].startswith("b")]
        if latest and latest[-1][0] not in e:
            e = "(%s + %s)" % (e, self.ref(latest[-1]))
        inputs = sorted({v[0] for v in self.values if v[0] + "[" in e})
        head = "let %s = compute(%s) {" % (name, ", ".join(inputs) if inputs else "x0")
        if kind == "map":
            body = ["    for i in 0..%d, j in 0..%d:" % (R, C), "        out[i, j] = %s" % e]
            out = (name, "RC", "f32")
        elif kind == "cast":
            dtype = r.choice(["f16", "i32"])
            self.narrowed = True
            scale = " * 10.0" if dtype == "i32" else ""
            body = ["    for i in 0..%d, j in 0..%d:" % (R, C), "        out[i, j] = %s(%s%s)" % (dtype, e, scale)]
            out = (name, "RC", dtype)
        elif kind in ("rowred", "colred"):
            op = r.choice(["+", "max", "min"])
            self.float_sum |= op == "+"
            axis = 1 if kind == "rowred" else 0
            body = ["    @kernel reduce(%s, axis=%d)" % (op, axis), "    for i in 0..%d, j in 0..%d:" % (R, C), "        yield %s" % e]
            out = (name, "R" if axis == 1 else "C", "f32")
        elif kind == "scatter":
            if "perm" not in inputs:
                head = head.replace("compute(", "compute(perm, " if inputs else "compute(perm")
                if not inputs:
                    head = head.replace("compute(permx0", "compute(perm, x0")
            body = ["    out = zeros(%d, %d)" % (R, C), "    for i in 0..%d, j in 0..%d:" % (R, C),
                    "        out[perm[i], j] += %s" % e]
            out = (name, "RC", "f32")
        else:  # matmul: reads its operand at [i, k] and [k, j]
            src = r.choice([v for v in self.values if v[1] == "RC"])
            self.read.add(src[0])
            self.float_sum = True
            cast = (lambda t: t) if src[2] == "f32" else (lambda t: "f32(%s)" % t)
            head = "let %s = compute(%s) {" % (name, src[0])
            body = ["    for i in 0..%d, j in 0..%d:" % (R, C), "        var s = 0.0",
                    "        for k in 0..%d:" % C,
                    "            s += %s * %s" % (cast(src[0] + "[i, k]"), cast(src[0] + "[k, j]")),
                    "        out[i, j] = s"]
            out = (name, "RC", "f32")
        if not last and r.random() < 0.3:
            # A block in a function of its own, as a layer is written:
            # its result is pending across the call and fuses as inline.
            args = head[head.index("compute(") + len("compute("):head.rindex(")")]
            self.lines += ["def f_%s(%s) {" % (name, args), "    let r = compute(%s) {" % args] + \
                ["    " + line for line in body] + ["    }", "    return r", "}", "let %s = f_%s(%s)" % (name, name, args)]
        else:
            self.lines += [head] + body + ["}"]
        self.values.append(out)

    def generate(self):
        r = self.rng
        self.values = [("x0", "RC", "f32"), ("x1", "RC", "f32"), ("v", "C", "f32"), ("w", "R", "f32")]
        n = r.randint(2, 5)
        for k in range(n):
            last = k == n - 1
            if last:
                # The last block reads every result no later block read.
                unread = [v for v in self.values if v[0].startswith("b") and v[0] not in self.read]
                self.block("b%d" % k, True)
                for v in unread:
                    self.lines[-2] = self.lines[-2] + " + " + self.ref(v)
                    names = self.lines[-4][len("let b%d = compute(" % k):-3].split(", ")
                    if v[0] not in names:
                        self.lines[-4] = "let b%d = compute(%s) {" % (k, ", ".join(names + [v[0]]))
            else:
                self.block("b%d" % k, False)
            if not last and r.random() < 0.1:
                # Host code with an effect: what is pending runs here, later blocks read it stored.
                self.lines.append("let t%d = time()" % k)
            if not last and r.random() < 0.35:
                # Quiet host code: runs first, the blocks around it still fuse.
                h = "h%d" % k
                self.lines += r.choice([
                    ["let %s = sqrt(float(%d)) / 4.0 + max(0.25, 0.5)" % (h, k + 2)],
                    ["var %s = 0.75" % h, "%s = %s * 2.0 - float(len(x0)) / %d.0" % (h, h, 4 * self.R)],
                    ["let %s = min(abs(sum(w)), 2.0) + 0.5" % h],
                ])
                self.hosts.append(h)
        final = "b%d" % (n - 1)
        self.lines.append('save(%s, "out.npy")' % final)
        if r.random() < 0.2 and n > 2:
            self.lines.append("print(sum(b0))")  # a host read: b0 stays a tensor
        return "\n".join(self.lines) + "\n"


def inputs_for(p, rng):
    g = np.random.default_rng(rng.randrange(1 << 30))
    return {
        "x0": g.standard_normal((p.R, p.C)).astype(np.float32),
        "x1": g.standard_normal((p.R, p.C)).astype(np.float32),
        "v": g.standard_normal(p.C).astype(np.float32),
        "w": g.standard_normal(p.R).astype(np.float32),
        "perm": g.permutation(p.R).astype(np.int64),
    }


def run(zyntax, src, inputs, device, fusion, workdir):
    d = tempfile.mkdtemp(dir=workdir)
    header = "".join('let %s = load("%s.npy")\n' % (k, k) for k in inputs)
    with open(os.path.join(d, "p.zynml"), "w") as f:
        f.write(header + src)
    for k, a in inputs.items():
        np.save(os.path.join(d, k + ".npy"), a)
    p = subprocess.run([zyntax, "run", "p.zynml", "--device", device, "--fusion", fusion, "--explain-fusion"], cwd=d,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    out = os.path.join(d, "out.npy")
    data = open(out, "rb").read() if os.path.exists(out) else None
    return p.returncode, p.stdout, p.stderr, data


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zyntax", default=os.path.join(ROOT, "build", "zyntax"))
    ap.add_argument("--programs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--devices", default="cpu,cpu:1,vulkan:0")
    args = ap.parse_args()
    listed = subprocess.run([args.zyntax, "devices"], stdout=subprocess.PIPE, text=True).stdout
    devices = ["cpu:reference"] + [d for d in args.devices.split(",") if ("\n" + d + "\t") in "\n" + listed]
    print("devices:", ", ".join(devices))
    workdir = tempfile.mkdtemp(prefix="zyntax_fusion_")
    failures, fused_kernels = [], 0
    try:
        for seed in range(args.seed, args.seed + args.programs):
            rng = random.Random(seed)
            p = Program(rng)
            src = p.generate()
            inputs = inputs_for(p, rng)
            results = {}
            for device in devices:
                on = run(args.zyntax, src, inputs, device, "on", workdir)
                off = run(args.zyntax, src, inputs, device, "off", workdir)
                fused_kernels += on[2].count("run as one kernel")
                why = None
                if on[0] != 0 or off[0] != 0:
                    why = "exit %d / %d: %s%s" % (on[0], off[0], on[2][-400:], off[2][-400:])
                elif on[1] != off[1]:
                    why = "printed %r with fusion, %r without" % (on[1], off[1])
                elif on[3] != off[3]:
                    got = np.frombuffer(on[3][-p.R * p.C * 4:], np.float32)
                    want = np.frombuffer(off[3][-p.R * p.C * 4:], np.float32)
                    if not p.float_sum or len(on[3]) != len(off[3]) or not np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True):
                        why = "saved other bytes with fusion (max difference %g)" % (
                            np.nanmax(np.abs(got - want)) if got.shape == want.shape else float("nan"))
                if why:
                    failures.append((seed, device, why, src, on[2]))
                results[device] = on[3]
            ref = None if p.narrowed else results.get("cpu:reference")
            for device, data in results.items():
                if device == "cpu:reference" or data is None or ref is None or len(data) != len(ref):
                    continue
                got = np.frombuffer(data[-p.R * p.C * 4:], np.float32)
                want = np.frombuffer(ref[-p.R * p.C * 4:], np.float32)
                if not np.allclose(got, want, rtol=2e-4, atol=2e-4, equal_nan=True):
                    failures.append((seed, device, "differs from the reference by %g" % np.nanmax(np.abs(got - want)), src, ""))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for seed, device, why, src, explain in failures:
        print("FAIL seed %d on %s: %s\n%s%s" % (seed, device, why, src, explain))
    print("%d programs (seeds %d..%d) on %s: %d fused kernels, %d failures" % (
        args.programs, args.seed, args.seed + args.programs - 1, ", ".join(devices), fused_kernels, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
