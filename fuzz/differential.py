#!/usr/bin/python3
"""Differential fuzzing of the compiled backends against the reference executor.

Generates random well-typed ZynML programs (element-wise blocks over random
expression trees, reductions, chains of blocks; f32, f64, i32 and i64; literal
operands among them IEEE edge values and subnormals; host numbers; inputs
loaded from files with edge values sprinkled in and tensors made on the host;
random annotations), runs each with `zyntax run` on `cpu:reference` and on
every other device available, and compares what they save:

  * bit for bit (signed zeros and NaN included) on `cpu` for programs of exact
    operations (+ - * / %, min, max, abs, rounding, sqrt, casts, comparisons);
    within 4 ulp-ish (1e-6 relative) where one approximate function (exp,
    tanh, sin, gelu, ...) sits on top of exact ones;
  * within 1e-5 relative of the array's scale on GPU-style devices
    (`vulkan:0`), whose shader compilers may fuse a * b + c; integers, NaN and
    infinities exactly there too;
  * a program the reference refuses at run time (an integer division by
    zero) must be refused by every device with the same error.

Every failure is written to OUT/<seed>/ (the program, its inputs, what each
device printed) and listed at the end; exit 1 if there was one. The corpus of
past findings (fuzz/differential/*/, a program and its inputs each) runs
first.

    /usr/bin/python3 fuzz/differential.py [--zyntax build/zyntax] [--seconds 60]
        [--seed 1] [--programs N] [--devices cpu,vulkan:0] [--out build-fuzz/differential]
"""

import argparse
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "differential")
TIMEOUT_S = 120

FLOAT_EDGES = ["0.0", "-0.0", "1.0", "-2.5", "0.1", "3.0", "1e10", "-1e-3", "1e-40", "65504.0", "3e38", "inf", "-inf",
               "nan", "0.5", "-7.0"]
INT_EDGES = ["0", "1", "-1", "2", "3", "-7", "100", "65537", "2147483647", "-2147483648"]
EXACT_UNARY = ["abs", "floor", "ceil", "round", "trunc", "sqrt", "relu", "sign"]
APPROX_UNARY = ["exp", "log", "sin", "cos", "tanh", "sigmoid", "gelu", "silu", "erf", "exp2", "log2", "atan",
                "asin", "acos", "sinh", "cosh", "rsqrt", "gelu_tanh", "log10", "tan"]
FLOAT_BINARY = ["+", "-", "*", "/", "%", "min", "max"]
INT_BINARY = ["+", "-", "*", "/", "%", "min", "max"]
NP_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}


class Program:
    """One generated program: its source, its input arrays, the arrays it saves
    and whether every operation in it is exact."""

    def __init__(self, rng):
        self.rng = rng
        self.lines = []
        self.inputs = {}
        self.outputs = []
        self.exact = True
        self.dtype = None
        self.host_values = {}  # host tensors and numbers, as NumPy makes them (for WebGPU's arguments)

    # ------------------------------------------------------------ values

    def literal(self, dtype):
        r = self.rng
        if dtype in ("f32", "f64"):
            return r.choice(FLOAT_EDGES) if r.random() < 0.5 else repr(round(r.uniform(-4, 4), r.choice([0, 1, 3])))
        v = r.choice(INT_EDGES) if r.random() < 0.3 else str(r.randint(-9, 9))
        if dtype == "i32" and v in ("2147483647", "-2147483648"):
            v = "5"
        return v

    def array(self, dtype, shape):
        r = np.random.default_rng(self.rng.randrange(2**32))
        if dtype in ("f32", "f64"):
            a = (r.standard_normal(shape) * 10.0 ** r.integers(-2, 3, shape)).astype(NP_DTYPES[dtype])
            edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 3e38, 1.0, -1.0], NP_DTYPES[dtype])
            mask = r.random(shape) < 0.15
            a[mask] = r.choice(edges, int(mask.sum()))
            return a
        a = r.integers(-50, 50, shape).astype(NP_DTYPES[dtype])
        mask = r.random(shape) < 0.1
        a[mask] = r.choice(np.array([0, 1, -1, np.iinfo(NP_DTYPES[dtype]).max, np.iinfo(NP_DTYPES[dtype]).min],
                                    NP_DTYPES[dtype]), int(mask.sum()))
        return a

    # ------------------------------------------------------------ expressions

    def expr(self, dtype, leaves, depth):
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            if r.random() < 0.7:
                return r.choice(leaves)
            lit = self.literal(dtype)
            return "(" + lit + ")" if lit.startswith("-") else lit
        a = self.expr(dtype, leaves, depth - 1)
        choice = r.random()
        is_float = dtype in ("f32", "f64")
        if choice < 0.55:
            op = r.choice(FLOAT_BINARY if is_float else INT_BINARY)
            b = self.expr(dtype, leaves, depth - 1)
            if op in ("min", "max"):
                return "%s(%s, %s)" % (op, a, b)
            return "(%s %s %s)" % (a, op, b)
        if choice < 0.7:
            if not is_float:
                return r.choice(["abs(%s)", "(-%s)", "relu(%s)", "sign(%s)"]) % a
            return "%s(%s)" % (r.choice(EXACT_UNARY), a) if r.random() < 0.8 else "(-%s)" % a
        if choice < 0.85:
            # A comparison or a cast through another type: exact either way.
            other = r.choice(["f32", "f64", "i32", "i64"])
            if r.random() < 0.5:
                b = self.expr(dtype, leaves, depth - 1)
                return "%s((%s %s %s))" % (dtype, a, r.choice(["<", "<=", "==", "!=", ">"]), b)
            return "%s(%s(%s))" % (dtype, other, a)
        return "fma(%s, %s, %s)" % (a, self.expr(dtype, leaves, 0), self.expr(dtype, leaves, 0)) if is_float else a

    def approximate_top(self, dtype, e):
        """One approximate function at the top of an exact expression."""
        if dtype not in ("f32", "f64") or self.rng.random() < 0.6:
            return e
        self.exact = False
        fn = self.rng.choice(APPROX_UNARY + ["atan2", "pow"])
        if fn in ("atan2", "pow"):
            return "%s(%s, %s)" % (fn, e, self.literal(dtype))
        return "%s(%s)" % (fn, e)

    # ------------------------------------------------------------ blocks

    def annotation(self, kind):
        r = self.rng
        out = []
        if r.random() < 0.5:
            out.append("@kernel " + kind)
        if r.random() < 0.15:
            out.append("@workgroup(%d)" % r.choice([32, 64, 128, 256]))
        if r.random() < 0.1:
            out.append("@tile(block=%d)" % r.choice([8, 16, 64]))
        return out

    def generate(self):
        r = self.rng
        dtype = self.dtype = r.choice(["f32"] * 5 + ["f64", "f64", "i32", "i64", "i64"])
        rows, cols = r.choice([1, 2, 3, 5, 7, 16, 33]), r.choice([1, 2, 3, 4, 9, 17])
        self.lines.append("// generated by fuzz/differential.py")
        names = []
        for k in range(r.randint(1, 3)):
            name = "x%d" % k
            self.inputs[name] = self.array(dtype, (rows, cols))
            self.lines.append('let %s = load("%s.npy")' % (name, name))
            names.append(name)
        self.inputs["v"] = self.array(dtype, (cols,))
        self.lines.append('let v = load("v.npy")')
        if r.random() < 0.4:  # a tensor made on the host, not loaded
            fill = self.literal("f64" if dtype[0] == "f" else dtype)
            self.lines.append("let h = astype(full([%d, %d], %s), %s)" % (rows, cols, fill, dtype))
            self.host_values["h"] = np.full((rows, cols), float(fill) if dtype[0] == "f" else int(fill)).astype(NP_DTYPES[dtype])
            names.append("h")
        host = "hs%d" % r.randrange(100)
        number = self.literal(dtype if dtype[0] == "i" else "f64")
        self.lines.append("let %s = %s" % (host, number))
        self.host_values[host] = np.array(int(number), np.int64) if dtype[0] == "i" else np.array(float(number), np.float64)
        results = []  # exact results, which later blocks may read
        for b in range(r.randint(1, 3)):
            inputs = sorted(set(r.sample(names + results, min(len(names + results), r.randint(1, 3)))))
            leaves = ["%s[i, j]" % n for n in inputs] + ["v[j]", host, "f32(i)" if dtype == "f32" else "%s(j)" % dtype]
            block = "k%d" % b
            exact_body = self.expr(dtype, leaves, r.randint(1, 4))
            body = self.approximate_top(dtype, exact_body)
            self.lines.append("let %s = compute(%s) {" % (block, ", ".join(inputs + ["v"])))
            self.lines += ["    " + a for a in self.annotation("elementwise")]
            self.lines.append("    for i in 0..%d, j in 0..%d:" % (rows, cols))
            self.lines.append("        out[i, j] = %s" % body)
            self.lines.append("}")
            self.outputs.append(block)
            # An approximate result read by another block could cross an
            # integer (floor) or a comparison: only exact ones feed others.
            if body is exact_body:
                results.append(block)
        if results and r.random() < 0.5:  # a reduction over one of the exact results
            src = r.choice(results)
            op = r.choice(["+", "max", "min", "argmax", "argmin"] if dtype[0] == "f" else ["+", "max", "min", "*"])
            axis = r.choice(["", ", axis=0", ", axis=1", ", axis=-1"])
            self.lines.append("let red = compute(%s) {" % src)
            self.lines.append("    @kernel reduce(%s%s)" % (op, axis))
            self.lines.append("    for i in 0..%d, j in 0..%d:" % (rows, cols))
            pick = "j" if axis in (", axis=1", ", axis=-1") else "i" if axis == ", axis=0" else "i * %d + j" % cols
            self.lines.append("        yield %s" % ("(%s[i, j], %s)" % (src, pick) if op.startswith("arg") else "%s[i, j]" % src))
            self.lines.append("}")
            self.outputs.append("red")
            if op == "+" and dtype[0] == "f":
                self.exact = False  # devices may sum in another order
        for o in self.outputs:
            self.lines.append('save(%s, "%s.npy")' % (o, o))
        return self

    def source(self):
        return "\n".join(self.lines) + "\n"


# ---------------------------------------------------------------- running


def run(zyntax, workdir, device):
    """(exit status, stderr, {output: array})."""
    out = os.path.join(workdir, device.replace(":", "_"))
    os.makedirs(out, exist_ok=True)
    for f in glob.glob(os.path.join(workdir, "*.npy")):
        shutil.copy(f, out)
    try:
        p = subprocess.run([zyntax, "run", os.path.join(workdir, "program.zynml"), "--device", device], cwd=out,
                           capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 124, "timed out after %d s" % TIMEOUT_S, {}
    saved = {}
    for f in glob.glob(os.path.join(out, "k*.npy")) + glob.glob(os.path.join(out, "red.npy")):
        saved[os.path.basename(f)[:-4]] = np.load(f)
    return p.returncode, p.stderr, saved


def first_error(stderr):
    for line in stderr.splitlines():
        if "error:" in line:
            return line[line.index("error:"):]
    return stderr.strip().splitlines()[-1] if stderr.strip() else ""


def differences(ref, got, bitwise, rtol):
    """Why `got` is not `ref`, or None."""
    if ref.shape != got.shape or ref.dtype != got.dtype:
        return "shape/dtype %s %s vs %s %s" % (got.shape, got.dtype, ref.shape, ref.dtype)
    if ref.dtype.kind != "f":
        bad = ref != got
    else:
        nan_r, nan_g = np.isnan(ref), np.isnan(got)
        bad = nan_r != nan_g
        both = ~nan_r & ~nan_g
        if bitwise:
            bad |= both & ((ref != got) | (np.signbit(ref) != np.signbit(got)))
        else:
            inf = np.isinf(ref) | np.isinf(got)
            bad |= both & inf & (ref != got)
            finite = both & ~inf
            scale = np.max(np.abs(ref[finite])) if finite.any() else 0.0
            with np.errstate(all="ignore"):
                bad |= finite & (np.abs(ref.astype(np.float64) - got) > rtol * np.abs(ref.astype(np.float64)) + rtol * scale * 1e-3)
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    return "%d elements differ; first at %s: %r, reference %r" % (int(bad.sum()), where, got[where].item(), ref[where].item())


def check_program(zyntax, workdir, devices, exact, webgpu=None, program=None):
    """Failure messages for the program in workdir (on WebGPU too where
    `webgpu` is running and `program` says what to call)."""
    failures = []
    p = subprocess.run([zyntax, "check", os.path.join(workdir, "program.zynml")], capture_output=True, text=True,
                       timeout=TIMEOUT_S)
    if p.returncode != 0:
        failures.append("zyntax check refuses it: " + first_error(p.stderr))
    ref_rc, ref_err, ref_out = run(zyntax, workdir, "cpu:reference")
    if ref_rc not in (0, 1) or "internal" in ref_err:
        failures.append("cpu:reference: exit %d: %s" % (ref_rc, first_error(ref_err)))
        return failures
    for d in devices:
        rc, err, out = run(zyntax, workdir, d)
        if rc != ref_rc:
            failures.append("%s: exit %d (%s), reference exit %d (%s)" % (d, rc, first_error(err), ref_rc, first_error(ref_err)))
            continue
        if rc != 0:
            if first_error(err) != first_error(ref_err):
                failures.append("%s: error %r, reference %r" % (d, first_error(err), first_error(ref_err)))
            continue
        gpu_like = not d.startswith("cpu")
        for name, ref in ref_out.items():
            if name not in out:
                failures.append("%s: did not save %s" % (d, name))
                continue
            why = differences(ref, out[name], bitwise=exact and not gpu_like, rtol=1e-5 if gpu_like else 1e-6)
            if why:
                failures.append("%s: %s: %s" % (d, name, why))
    if webgpu and webgpu.available() and program and program.dtype in WebGpu.DTYPES:
        failures += check_webgpu(zyntax, workdir, webgpu, program.outputs, program.host_values, ref_rc, ref_out, exact)
    return failures


class WebGpu:
    """Programs' kernels on WebGPU, called from JavaScript as a user would
    (fuzz/webgpu_runner.mjs: one node process with Dawn for the whole run)."""

    # WGSL has neither f64 nor i64: programs in those types are not for it.
    DTYPES = ("f32", "i32")
    # WebGPU's documented limits (indices and integers in 32 bits; no f64, so
    # no integer converted to f64: a program may have no kernel for WebGPU
    # at all) are refusals, not wrong results.
    LIMITS = ("past 32 bits", "no kernel was compiled for WebGPU")

    def __init__(self):
        self.proc = None
        try:
            self.proc = subprocess.Popen(["node", os.path.join(HERE, "webgpu_runner.mjs")], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
        except OSError:
            return
        if '"ready"' not in self.proc.stdout.readline():
            self.proc.wait()
            self.proc = None

    def available(self):
        return self.proc is not None

    def run(self, zyntax, workdir, program_kernels, host_values):
        """(error or None, {output: array}) for the program in workdir."""
        here = os.path.join(workdir, "webgpu")
        os.makedirs(here, exist_ok=True)
        for f in glob.glob(os.path.join(workdir, "*.npy")):
            shutil.copy(f, here)
        # Compiled for the inputs' types and sizes (a load()ed input's are
        # known only once the program runs).
        p = subprocess.run([zyntax, "compile", os.path.join(workdir, "program.zynml"), "--backend", "webgpu", "--emit", "js",
                            "--sizes-from-run", "-o", here], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=here)
        if p.returncode != 0:
            return "compile: " + first_error(p.stderr), {}
        for name, a in host_values.items():
            np.save(os.path.join(here, name + ".npy"), a)
        request = {"module": os.path.join(here, "program.mjs"), "dir": here, "kernels": program_kernels}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc = None
            return "the WebGPU runner stopped", {}
        answer = json.loads(line)
        if "error" in answer:
            return answer["error"], {}
        saved = {}
        for name in program_kernels:
            f = os.path.join(here, "webgpu", name + ".npy")
            if os.path.exists(f):
                saved[name] = np.load(f)
        return None, saved


def check_webgpu(zyntax, workdir, webgpu, kernels, host_values, ref_rc, ref_out, exact):
    """Failure messages for the program in workdir on WebGPU: results within
    1e-5 where every operation is exact, else within the accuracy WGSL
    promises for its built-in functions (atan within 4096 ulp: 3e-4)."""
    error, out = webgpu.run(zyntax, workdir, kernels, host_values)
    if error and any(limit in error for limit in WebGpu.LIMITS):
        return []
    if ref_rc != 0:
        return [] if error else ["webgpu: ran, the reference refused it"]
    if error:
        return ["webgpu: " + error]
    failures = []
    for name, ref in ref_out.items():
        if name not in out:
            continue  # not written for WebGPU
        why = differences(ref, out[name], bitwise=False, rtol=1e-5 if exact else 3e-4)
        if why:
            failures.append("webgpu: %s: %s" % (name, why))
    return failures


def available_devices(zyntax, wanted):
    p = subprocess.run([zyntax, "devices"], capture_output=True, text=True)
    have = {line.split("\t")[0] for line in p.stdout.splitlines() if line and not line.startswith("#")}
    return [d for d in wanted if d in have]


def write_case(workdir, program):
    with open(os.path.join(workdir, "program.zynml"), "w") as f:
        f.write(program.source())
    for name, a in program.inputs.items():
        np.save(os.path.join(workdir, name + ".npy"), a)
    # What WebGPU's runner calls, so that a kept case replays there too.
    with open(os.path.join(workdir, "webgpu.json"), "w") as f:
        json.dump({"dtype": program.dtype, "outputs": program.outputs}, f)
    np.savez(os.path.join(workdir, "host_values.npz"), **program.host_values)


def read_case(folder):
    """What write_case kept of the program in `folder` for WebGPU, or None."""
    meta = os.path.join(folder, "webgpu.json")
    if not os.path.exists(meta):
        return None
    with open(meta) as f:
        m = json.load(f)
    with np.load(os.path.join(folder, "host_values.npz")) as values:
        host_values = {name: values[name] for name in values.files}
    return types.SimpleNamespace(dtype=m["dtype"], outputs=m["outputs"], host_values=host_values)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zyntax", default=os.path.join(ROOT, "build", "zyntax"))
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--programs", type=int, default=0, help="stop after this many (0: only the time bounds the run)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--devices", default="cpu,vulkan:0,webgpu")
    ap.add_argument("--out", default=os.path.join(ROOT, "build-fuzz", "differential"))
    args = ap.parse_args()
    wanted = [d for d in args.devices.split(",") if d]
    devices = available_devices(args.zyntax, [d for d in wanted if d != "webgpu"])
    webgpu = WebGpu() if "webgpu" in wanted else None
    print("devices against cpu:reference:", ", ".join(devices + (["webgpu"] if webgpu and webgpu.available() else [])) or "none")
    found = []
    on_webgpu = 0
    # Past findings first: each a program and its inputs.
    for case in sorted(glob.glob(os.path.join(CORPUS, "*", "program.zynml"))):
        workdir = tempfile.mkdtemp(prefix="zyntax_diff_")
        for f in glob.glob(os.path.join(os.path.dirname(case), "*")):
            shutil.copy(f, workdir)
        exact = "// exact" in open(case).read()
        kept = read_case(os.path.dirname(case))
        on_webgpu += bool(kept and webgpu and webgpu.available() and kept.dtype in WebGpu.DTYPES)
        for why in check_program(args.zyntax, workdir, devices, exact, webgpu, kept):
            found.append((os.path.basename(os.path.dirname(case)), why))
        shutil.rmtree(workdir, ignore_errors=True)
    start, count, seed = time.time(), 0, args.seed
    while time.time() - start < args.seconds and (not args.programs or count < args.programs):
        program = Program(random.Random(seed)).generate()
        if program.exact:
            program.lines.insert(1, "// exact: every operation is exact, compared bit for bit")
        workdir = tempfile.mkdtemp(prefix="zyntax_diff_")
        write_case(workdir, program)
        failures = check_program(args.zyntax, workdir, devices, program.exact, webgpu, program)
        if failures:
            keep = os.path.join(args.out, "seed%d" % seed)
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(workdir, keep)
            for why in failures:
                found.append(("seed %d (%s)" % (seed, keep), why))
        shutil.rmtree(workdir, ignore_errors=True)
        count += 1
        seed += 1
    print("%d generated programs (seeds %d..%d) and %d corpus cases (%d on WebGPU too) in %.0f s; %d findings" %
          (count, args.seed, seed - 1, len(glob.glob(os.path.join(CORPUS, "*", "program.zynml"))), on_webgpu,
           time.time() - start, len(found)))
    for where, why in found:
        print("FAIL %s: %s" % (where, why))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
