#!/usr/bin/env python3
"""The zyntax command line: help, version, exit codes (0 ok, 1 program error,
2 usage error), compile -o, devices."""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "transformer_block.zynml")

failures = []


def run(zyntax, *args, cwd=None):
    p = subprocess.run([zyntax, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def expect(name, cond, detail=""):
    if not cond:
        failures.append("%s %s" % (name, detail))
        print("FAIL", name, detail)
    else:
        print("ok  ", name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zyntax", required=True)
    ap.add_argument("--driver-without-gpu", help="a CUDA driver library that sees no GPU (tests/gpu)")
    args = ap.parse_args()
    z = args.zyntax

    rc, out, _ = run(z, "--version")
    expect("version", rc == 0 and out.startswith("zyntax "), out)
    rc, out, _ = run(z, "--help")
    expect("help", rc == 0 and all(s in out for s in ["run", "check", "compile", "devices"]), out)
    for sub in ["run", "check", "compile", "devices", "tune"]:
        rc, out, _ = run(z, sub, "--help")
        expect("%s --help" % sub, rc == 0 and "Usage" in out, out)
    rc, out, _ = run(z, "run", "--help")
    expect("run --help names every kind of device", rc == 0 and all(d in out for d in ["cpu:N", "cuda:N", "metal:N", "vulkan:N", "zyntax devices"]), out)
    rc, _, err = run(z)
    expect("no subcommand is a usage error", rc == 2, err)
    rc, _, err = run(z, "frobnicate")
    expect("unknown subcommand is a usage error", rc == 2, err)
    rc, _, err = run(z, "compile", EXAMPLE, "--emit", "wasm")
    expect("bad --emit value is a usage error", rc == 2, err)
    rc, _, err = run(z, "run", EXAMPLE, "--device", "tpu:7")
    expect("unknown device is a usage error", rc == 2 and "tpu:7" in err and "available" in err, err)
    rc, _, err = run(z, "check", "/nonexistent/file.zynml")
    expect("missing file is a program error", rc == 1 and "cannot read" in err, err)
    rc, out, err = run(z, "check", EXAMPLE)
    expect("check of the example", rc == 0 and out == "" and err == "", err)
    rc, out, _ = run(z, "devices")
    expect("devices lists cpu", rc == 0 and out.startswith("cpu\t"), out)
    if sys.platform.startswith("linux"):
        expect("devices says why there is no Metal device", "Metal needs macOS" in out, out)

    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.zynml")
        with open(bad, "w") as f:
            f.write("let x = \n")
        rc, _, err = run(z, "check", bad)
        expect("syntax error exits 1", rc == 1 and "bad.zynml:1:" in err and "error:" in err, err)
        boom = os.path.join(tmp, "boom.zynml")
        with open(boom, "w") as f:
            f.write("let x = ones([3])\nlet y = x[5]\n")
        rc, _, err = run(z, "run", boom)
        expect("runtime error exits 1", rc == 1 and "boom.zynml:2:" in err, err)
        cir = os.path.join(tmp, "out.cir")
        rc, out, err = run(z, "compile", EXAMPLE, "--emit", "cir", "-o", cir)
        text = open(cir).read() if os.path.exists(cir) else ""
        expect("compile -o writes the CIR", rc == 0 and out == "" and text.count("\nkernel ") + text.startswith("kernel ") == 6,
               err)
        ast = os.path.join(tmp, "out.ast")
        rc, _, err = run(z, "compile", EXAMPLE, "--emit", "ast", "-o", ast)
        expect("compile --emit ast", rc == 0 and open(ast).read().startswith("(module"), err)
        rc, out, err = run(z, "compile", EXAMPLE, "--emit", "llvm")
        expect("--emit llvm prints LLVM IR of the compiled kernels",
               rc == 0 and "define void @zyntax_kernel_qkv" in out and "runs on the reference executor" in out, err)
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "llvm", "--emit", "asm", "--kernel", "qkv",
                           "--dim", "batch=2", "--dim", "seq=8", "--dim", "hidden=16",
                           "--dim", "weights.qkv_proj.d0=16", "--dim", "weights.qkv_proj.d1=48")
        expect("--emit asm of one specialised kernel", rc == 0 and "zyntax_kernel_qkv" in out and "ret" in out, err)
        rc, _, err = run(z, "compile", EXAMPLE, "--emit", "asm", "--kernel", "qkv", "--dim", "batch=2")
        expect("missing --dim sizes are a usage error naming them", rc == 2 and "needs --dim for" in err, err)
        obj = os.path.join(tmp, "qkv.o")
        rc, _, err = run(z, "compile", EXAMPLE, "--emit", "obj", "--kernel", "qkv", "-o", obj)
        expect("--emit obj writes an ELF object", rc == 0 and open(obj, "rb").read(4) == b"\x7fELF", err)
        rc, out, err = run(z, "compile", EXAMPLE, "--emit", "cir", "--print-passes")
        expect("--print-passes logs every pass", rc == 0 and "after mark_parallel_loops" in err and "after simplify" in err,
               err[:200])

    # The NVPTX backend needs no GPU: PTX text, one entry point per kernel.
    with tempfile.TemporaryDirectory() as tmp:
        ptx = os.path.join(tmp, "out.ptx")
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "nvptx", "--arch", "sm_90", "-o", ptx)
        text = open(ptx).read() if os.path.exists(ptx) else ""
        expect("--backend nvptx writes PTX", rc == 0 and ".target sm_90" in text and ".visible .entry qkv(" in text
               and ".maxntid 256, 1, 1" in text and "not compiled for the GPU" in text, err)
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "nvptx", "--emit", "llvm", "--kernel", "qkv")
        expect("--backend nvptx --emit llvm", rc == 0 and "nvptx64-nvidia-cuda" in out and "define void @qkv(" in out, err)
        rc, out, err = run(z, "compile", EXAMPLE, "--emit", "ptx", "--kernel", "qkv", "--dim", "batch=2", "--dim", "seq=8",
                           "--dim", "hidden=16", "--dim", "weights.qkv_proj.d0=16", "--dim", "weights.qkv_proj.d1=48")
        expect("--emit ptx of a specialised kernel", rc == 0 and ".target sm_80" in out and "qkv_param_4" not in out, err)
        rc, _, err = run(z, "compile", EXAMPLE, "--backend", "nvptx", "--arch", "sm_13")
        expect("unknown --arch is a usage error listing the known ones", rc == 2 and "sm_13" in err and "sm_90a" in err, err)
        rc, _, err = run(z, "compile", EXAMPLE, "--emit", "asm", "--backend", "nvptx")
        expect("--backend nvptx --emit asm is a usage error", rc == 2 and "ptx, llvm or cir" in err, err)
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "nvptx", "--emit", "cir", "--kernel", "normed")
        expect("--backend nvptx --emit cir prints the GPU schedule", rc == 0 and "// entry normed" in out
               and "gpu_block" in out and "block_reduce" in out, out + err)
        # The ROCm backend needs no GPU and no ROCm: HSA code objects for AMD GPUs.
        hsaco = os.path.join(tmp, "out.hsaco")
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "rocm", "--arch", "gfx942", "--sizes-from-run", "-o", hsaco)
        data = open(hsaco, "rb").read() if os.path.exists(hsaco) else b""
        expect("--backend rocm -o writes an HSA code object", rc == 0 and data[:4] == b"\x7fELF" and b"qkv.kd" in data
               and b"amdgcn-amd-amdhsa--gfx942" in data, err)
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "rocm", "--arch", "gfx1100", "--kernel", "normed", "--sizes-from-run")
        expect("--backend rocm without -o prints the assembly", rc == 0 and ".amdgcn_target \"amdgcn-amd-amdhsa--gfx1100\"" in out
               and "s_barrier" in out and ".wavefront_size: 32" in out, out[:400] + err)
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "rocm", "--emit", "llvm", "--kernel", "qkv")
        expect("--backend rocm --emit llvm", rc == 0 and "amdgcn-amd-amdhsa" in out and "amdgpu_kernel void @qkv(" in out, out[:400] + err)
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "rocm", "--emit", "cir", "--kernel", "normed")
        expect("--backend rocm --emit cir prints the GPU schedule", rc == 0 and "// entry normed" in out and "block_reduce" in out, out + err)
        rc, out, err = run(z, "compile", EXAMPLE, "--emit", "hsaco", "--code-object", "4", "--kernel", "qkv", "-o", hsaco)
        data = open(hsaco, "rb").read() if os.path.exists(hsaco) else b""
        expect("--emit hsaco implies --backend rocm (gfx90a); --code-object 4", rc == 0 and b"gfx90a" in data
               and data[7:9] == bytes([0x40, 0x02]), err)
        rc, _, err = run(z, "compile", EXAMPLE, "--emit", "hsaco")
        expect("--emit hsaco without -o is a usage error", rc == 2 and "-o FILE" in err, err)
        rc, _, err = run(z, "compile", EXAMPLE, "--backend", "rocm", "--arch", "gfx803")
        expect("an unknown AMD architecture is a usage error listing the known ones", rc == 2 and "gfx803" in err and "gfx1100" in err, err)
        rc, _, err = run(z, "compile", EXAMPLE, "--backend", "rocm", "--emit", "ptx")
        expect("--backend rocm --emit ptx is a usage error", rc == 2 and "hsaco, asm, llvm or cir" in err, err)
        rc, _, err = run(z, "compile", EXAMPLE, "--backend", "nvptx", "--code-object", "4")
        expect("--code-object without rocm is a usage error", rc == 2 and "--code-object" in err, err)
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "vulkan", "--kernel", "normed", "--sizes-from-run")
        expect("--backend vulkan writes GLSL", rc == 0 and "#version 450" in out and "// kernel normed" in out
               and "subgroupShuffleXor" in out, out + err)
        rc, out, err = run(z, "compile", EXAMPLE, "--emit", "spirv-asm", "--kernel", "normed", "--sizes-from-run")
        expect("--emit spirv-asm", rc == 0 and "OpEntryPoint GLCompute" in out, out[:500] + err)
        spv = os.path.join(tmp, "normed.spv")
        rc, _, err = run(z, "compile", EXAMPLE, "--emit", "spirv", "--kernel", "normed", "--sizes-from-run", "-o", spv)
        with open(spv, "rb") as f:
            magic = f.read(4)
        expect("--emit spirv writes a SPIR-V binary", rc == 0 and magic == bytes([0x03, 0x02, 0x23, 0x07]), err)
        rc, _, err = run(z, "compile", EXAMPLE, "--emit", "spirv")
        expect("--emit spirv without -o is a usage error", rc == 2 and "-o FILE" in err, err)
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "webgpu", "--kernel", "qkv")
        expect("--backend webgpu writes WGSL", rc == 0 and "@compute @workgroup_size(128)" in out and "// kernel qkv" in out
               and "var<uniform> args" in out, out + err)
        rc, out, err = run(z, "compile", EXAMPLE, "--emit", "wgsl", "--kernel", "attn_out")
        expect("a kernel WGSL is not written for says why", rc == 0 and "not compiled for WebGPU (" in out, out + err)
        rc, _, err = run(z, "compile", EXAMPLE, "--backend", "webgpu", "--emit", "glsl")
        expect("--backend webgpu --emit glsl is a usage error", rc == 2 and "emits wgsl or js" in err, err)
        rc, out, err = run(z, "compile", EXAMPLE, "--backend", "metal", "--kernel", "normed", "--sizes-from-run")
        expect("--backend metal writes MSL", rc == 0 and "kernel void zy_main(" in out and "// kernel normed" in out
               and "simd_shuffle_xor" in out and "[[buffer(0)]]" in out, out + err)
        rc, out, err = run(z, "compile", EXAMPLE, "--emit", "msl", "--kernel", "attn_out")
        expect("--emit msl implies --backend metal, and a kernel not written says why",
               rc == 0 and "not compiled for Metal (" in out, out + err)
        rc, _, err = run(z, "compile", EXAMPLE, "--backend", "vulkan", "--emit", "msl")
        expect("--backend vulkan --emit msl is a usage error", rc == 2 and "msl comes from --backend metal" in err, err)
        for bad in ("x=abc", "x=12abc", "x=-3", "x=", "=4", "x=99999999999999999999"):
            rc, _, err = run(z, "compile", EXAMPLE, "--emit", "llvm", "--dim", bad)
            expect("--dim %s is a usage error saying why" % bad, rc == 2 and "--dim" in err and "stoll" not in err, err)
        if os.path.exists("/dev/full"):
            rc, _, err = run(z, "compile", EXAMPLE, "--emit", "cir", "-o", "/dev/full")
            expect("a full disk is an error, not a silent loss", rc == 1 and "cannot write" in err, err)
        failing = os.path.join(tmp, "fails.zynml")
        with open(failing, "w") as f:
            f.write("def f(x: tensor[n, f32]) {\n return compute(x) {\n @kernel elementwise\n for i in 0..n:\n  out[i] = x[i]\n }\n}\n"
                    "let a = ones([3])\nprint(f(a))\nlet b = a[10]\n")
        rc, _, err = run(z, "compile", failing, "--backend", "nvptx", "--sizes-from-run")
        expect("--sizes-from-run of a program that fails is a program error (1)", rc == 1 and "failed while running" in err, err)
        tiles_only = os.path.join(tmp, "tiles.zynml")
        with open(tiles_only, "w") as f:
            f.write("def f(x: tensor[r, c, f32]) {\n return compute(x) {\n @kernel fused\n for i in 0..r:\n  out[i] = reduce(argmax, x[i])\n }\n}\n")
        rc, out, err = run(z, "compile", tiles_only, "--backend", "nvptx")
        expect("a PTX module without kernels is an error saying why", rc == 2 and "no kernel was compiled" in err
               and "give every size" in err and ".entry" not in out, out + err)
        fifo = os.path.join(tmp, "prog.fifo")
        os.mkfifo(fifo)
        rc, _, err = run(z, "check", fifo)
        expect("a FIFO as the program is refused at once, not waited on", rc == 1 and "not a regular file" in err, err)
        rc, _, err = run(z, "check", "/dev/zero")
        expect("/dev/zero as the program is refused at once", rc == 1 and "not a regular file" in err, err)
        rc, _, err = run(z, "compile", EXAMPLE, "--kernel", "nosuch")
        expect("--kernel of a kernel the program lacks is a usage error naming them", rc == 2 and "no kernel named 'nosuch'" in err
               and "qkv" in err, err)
        rc, _, err = run(z, "compile", EXAMPLE, "--emit", "js")
        expect("--emit js without -o is a usage error", rc == 2 and "-o DIR" in err, err)
        jsdir = os.path.join(tmp, "web")
        rc, _, err = run(z, "compile", EXAMPLE, "--emit", "js", "-o", jsdir)
        expect("--emit js writes the module and its runtime", rc == 0 and os.path.exists(os.path.join(jsdir, "transformer_block.mjs"))
               and os.path.exists(os.path.join(jsdir, "zyntax_webgpu.mjs")) and "not compiled for WebGPU" in err, err)
        rc, _, err = run(z, "compile", EXAMPLE, "--backend", "vulkan", "--emit", "wgsl")
        expect("--backend vulkan --emit wgsl is a usage error", rc == 2 and "--emit wgsl is for --backend webgpu" in err, err)
        rc, _, err = run(z, "compile", EXAMPLE, "--emit", "cir", "--arch", "sm_80")
        expect("--arch without nvptx is a usage error", rc == 2, err)

    # Machines without a GPU: the same binary runs, says why there is none,
    # and asking for one is a clear error. ZYNTAX_CUDA_DRIVER names the driver library.
    def with_driver(path, *cmd):
        p = subprocess.run([z, *cmd], env=dict(os.environ, ZYNTAX_CUDA_DRIVER=path), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    rc, out, err = with_driver("/nonexistent/libcuda.so.1", "devices")
    expect("devices without a driver says so", rc == 0 and out.startswith("cpu\t")
           and "no CUDA driver (/nonexistent/libcuda.so.1" in out, out + err)
    rc, out, err = with_driver("/nonexistent/libcuda.so.1", "run", EXAMPLE, "--device", "cuda:0")
    expect("--device cuda:0 without a driver is a usage error saying why",
           rc == 2 and "'cuda:0' is not available" in err and "no CUDA driver" in err, err)
    rc, out, err = with_driver("/nonexistent/libcuda.so.1", "run", EXAMPLE, "--verbose")
    expect("auto runs on the cpu without a GPU, and --verbose says so and why",
           rc == 0 and "output shape" in out and "zyntax: device auto -> cpu (" in err and "no CUDA driver" in err, err)
    rc, out, err = with_driver("/nonexistent/libcuda.so.1", "compile", EXAMPLE, "--backend", "cuda")
    expect("--backend cuda without a GPU is a usage error saying why",
           rc == 2 and "--backend cuda needs a GPU" in err and "no CUDA driver" in err, err)
    rc, out, err = with_driver("/lib/x86_64-linux-gnu/libm.so.6", "devices")
    expect("a library that is not a CUDA driver is reported", rc == 0 and "lacks cuInit" in out, out + err)
    if args.driver_without_gpu:
        rc, out, err = with_driver(args.driver_without_gpu, "devices")
        expect("a driver that sees no GPU is reported with the driver's error",
               rc == 0 and "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" in out, out + err)
        with tempfile.TemporaryDirectory() as tmp:
            prog = os.path.join(tmp, "on_gpu.zynml")
            with open(prog, "w") as f:
                f.write('let x = ones([4])\nlet y = compute(x) {\n    @device("cuda:0")\n    @kernel elementwise\n'
                        '    for i in 0..4:\n        out[i] = x[i] * 2.0\n}\nprint(y)\n')
            rc, out, err = with_driver(args.driver_without_gpu, "run", prog)
            expect("@device(\"cuda:0\") without a GPU is an error at the annotation, saying why",
                   rc == 1 and "on_gpu.zynml:3:" in err and "CUDA_ERROR_NO_DEVICE" in err, err)

    rc, out, err = run(z, "run", EXAMPLE, "--threads", "1", "--simd", "scalar")
    expect("--threads and --simd", rc == 0 and "output shape: [2, 24, 64]" in out, err)
    rc, _, err = run(z, "run", EXAMPLE, "--simd", "mmx")
    expect("unknown --simd level is a usage error", rc == 2, err)

    # --profile and --trace: per kernel a row, and a trace Perfetto reads.
    with tempfile.TemporaryDirectory() as tmp:
        import json
        trace = os.path.join(tmp, "trace.json")
        env = dict(os.environ, ZYNTAX_CACHE_DIR=os.path.join(tmp, "cache"))
        p = subprocess.run([z, "run", "--profile", "--trace", trace, EXAMPLE], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
        err = p.stderr.decode()
        kernels = ["qkv", "attn_out", "projected", "normed", "ffn_out", "output"]
        rows = [l for l in err.splitlines() if l.split() and l.split()[0] in kernels]
        expect("--profile prints a row per kernel", p.returncode == 0 and "compile ms" in err and "GFLOP/s" in err
               and len(rows) == 6 and all(r.split()[2] == "2" and r.split()[4] == "1" and r.split()[5] == "0" for r in rows),
               err)
        # The fastest and the median launch beside the mean: min <= median <= the slower of two.
        expect("--profile gives min and median times", "min ms" in err and "median ms" in err
               and all(float(r.split()[9]) <= float(r.split()[10]) <= 2 * float(r.split()[8]) + 1e-3 for r in rows), err)
        events = json.load(open(trace))["traceEvents"] if os.path.exists(trace) else []
        cats = {e.get("cat") for e in events}
        kernel_events = [e for e in events if e.get("cat") == "kernel"]
        expect("--trace writes host, compile and kernel events",
               {"host", "compile", "kernel"} <= cats and len(kernel_events) == 12
               and all(e["dur"] >= 0 and e["args"]["device"] for e in kernel_events), str(cats))
        # Slices nest: each compile inside the kernel launch that triggered it.
        compiles = [e for e in events if e.get("cat") == "compile"]
        expect("--trace: a compile's slice lies inside its kernel's", compiles and all(
            any(k["tid"] == c["tid"] and k["ts"] <= c["ts"] and c["ts"] + c["dur"] <= k["ts"] + k["dur"] + 1e-3
                for k in kernel_events) for c in compiles), str(compiles[:2]))
        # Statements inside functions are host slices too (make_layer's body, line 20).
        host_names = [e["name"] for e in events if e.get("cat") == "host"]
        expect("--trace: statements inside functions", any(n.startswith("20: let scale") for n in host_names), str(host_names))
        # A second process finds every kernel in the disk cache: hits, loaded from disk, not compiled.
        p = subprocess.run([z, "run", "--profile", "--trace", trace, EXAMPLE], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
        err = p.stderr.decode()
        rows = [l for l in err.splitlines() if l.split() and l.split()[0] in kernels]
        expect("--profile counts disk-cache loads as cache hits", p.returncode == 0 and len(rows) == 6
               and all(r.split()[4] == "2" and r.split()[5] == "1" for r in rows), err)
        events = json.load(open(trace))["traceEvents"] if os.path.exists(trace) else []
        expect("--trace marks compiles loaded from the disk cache",
               all(e["args"].get("from_disk") for e in events if e.get("cat") == "compile"), str(events[:3]))
        rc, _, err = run(z, "run", "--trace", os.path.join(tmp, "no", "such", "dir.json"), EXAMPLE)
        expect("an unwritable trace file exits 1", rc == 1 and "cannot write the trace" in err, err)
        clock = os.path.join(tmp, "clock.zynml")
        with open(clock, "w") as f:
            f.write("let t0 = time()\nlet x = sum(ones([1000]))\nlet t1 = time()\nprint(t1 >= t0, t0 >= 0.0)\n")
        rc, out, err = run(z, "run", clock)
        expect("time() reads a monotonic clock in seconds", rc == 0 and out.strip() == "true true", out + err)

    # The on-disk kernel cache: filled by a first run, used by a second, and a
    # corrupt entry is rebuilt, never run.
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, ZYNTAX_CACHE_DIR=cache)
        first = subprocess.run([z, "run", EXAMPLE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        files = sorted(f for f in os.listdir(cache) if f.endswith(".kernel"))
        expect("first run fills the kernel cache", first.returncode == 0 and len(files) >= 4, first.stderr.decode())
        second = subprocess.run([z, "run", EXAMPLE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        expect("second run from the cache gives the same output",
               second.returncode == 0 and second.stdout == first.stdout, second.stderr.decode())
        for f in files:
            with open(os.path.join(cache, f), "r+b") as fh:
                fh.seek(-20, 2)
                fh.write(b"garbage garbage garb")
        third = subprocess.run([z, "run", EXAMPLE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        expect("corrupt cache entries are rebuilt", third.returncode == 0 and third.stdout == first.stdout,
               third.stderr.decode())

    # Tuning: `zyntax tune` searches each kernel a run launches and records
    # the winners; a second tune finds them all; `run --tune` and the
    # profile's plan column; export and import; bad input.
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, ZYNTAX_CACHE_DIR=cache)
        prog = os.path.join(cache, "mm.zynml")
        with open(prog, "w") as f:
            f.write("def mm(a: tensor[m, k, f32], b: tensor[k, n, f32]) {\n"
                    "    return compute(a, b) {\n        @kernel matmul\n        for i in 0..m, j in 0..n:\n"
                    "            var s = 0.0\n            for p in 0..k:\n                s += a[i, p] * b[p, j]\n"
                    "            out[i, j] = s\n    }\n}\n"
                    "let c = mm(rand([96, 80]), rand([80, 72]))\nprint(sum(c) > 0.0)\n")

        def tune(*args):
            p = subprocess.run([z, "tune", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
            return p.returncode, p.stdout.decode(), p.stderr.decode()

        rc, out, err = tune(prog, "--device", "cpu", "--max-timed", "3")
        rows = [l for l in out.splitlines() if l.startswith("mm ")]
        expect("tune prints a row per kernel with its shapes and the search",
               rc == 0 and len(rows) == 1 and "f32[96,80] f32[80,72] -> f32[96,72]" in rows[0] and "timed" in rows[0], out + err)
        records = os.path.join(cache, "tuning", "records.jsonl")
        expect("tune writes the tuning database", os.path.exists(records) and len(open(records).read().splitlines()) == 1, out)
        rc, out, err = tune(prog, "--device", "cpu")
        expect("a second tune finds the record and times nothing", rc == 0 and "from the database" in out, out + err)
        p = subprocess.run([z, "run", prog, "--device", "cpu", "--profile"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        err = p.stderr.decode()
        mm_rows = [l.split() for l in err.splitlines() if l.split()[:1] == ["mm"]]
        expect("--profile says the kernel ran a tuned record's plan",
               p.returncode == 0 and p.stdout.decode().strip() == "true" and "plan" in err and mm_rows and mm_rows[0][6] in ("tuned", "default"), err)
        p = subprocess.run([z, "run", prog, "--device", "cpu", "--profile", "--tune", "off"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        err = p.stderr.decode()
        mm_rows = [l.split() for l in err.splitlines() if l.split()[:1] == ["mm"]]
        expect("--tune off runs the rules' plan", p.returncode == 0 and mm_rows and mm_rows[0][6] == "-", err)
        exported = os.path.join(cache, "exported.jsonl")
        rc, out, err = tune("--export", exported)
        expect("tune --export writes the records", rc == 0 and "exported 1 tuning record" in out and os.path.exists(exported), out + err)
        with tempfile.TemporaryDirectory() as other:
            env2 = dict(os.environ, ZYNTAX_CACHE_DIR=other)
            p = subprocess.run([z, "tune", "--import", exported], env=env2, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            expect("tune --import adds them to another database", p.returncode == 0 and b"imported 1 tuning record" in p.stdout,
                   p.stdout.decode() + p.stderr.decode())
            p = subprocess.run([z, "tune", prog, "--device", "cpu"], env=env2, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            expect("imported records are used", p.returncode == 0 and b"from the database" in p.stdout, p.stdout.decode())
        with open(records, "a") as f:
            f.write("{broken\n")
        rc, out, err = tune(prog, "--device", "cpu")
        expect("a corrupt line is a warning, the rest still used",
               rc == 0 and "records.jsonl:2: tuning record ignored" in err and "from the database" in out, out + err)
        rc, _, err = tune(prog, "--budget", "soon")
        expect("a bad --budget is a usage error", rc == 2 and "--budget" in err, err)
        rc, _, err = tune()
        expect("tune with nothing to do is a usage error", rc == 2 and "needs a program" in err, err)
        rc, _, err = run(z, "run", prog, "--tune", "always")
        expect("a bad --tune is a usage error", rc == 2, err)
        p = subprocess.run([z, "run", prog, "--device", "cpu"], env=dict(env, ZYNTAX_TUNE="sometimes"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        expect("a bad ZYNTAX_TUNE is a warning", p.returncode == 0 and b"ZYNTAX_TUNE='sometimes'" in p.stderr, p.stderr.decode())

    if failures:
        print("%d CLI checks failed" % len(failures))
        return 1
    print("all CLI checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
