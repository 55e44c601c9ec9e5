#!/usr/bin/env python3
"""GPU benchmarks: zyntax and its anchors on the same GPU in one run.

Runs zyntax_gpu_bench (runtime costs, and zyntax kernels timed with CUDA
events; then the same kernels on vulkan:0, timed by the queue's timestamps,
where the machine has a Vulkan driver) and, in this process, the same work in PyTorch (eager, cuBLAS with
and without TF32, bf16, f16, fused scaled-dot-product attention, SDPA's
flash backend in bf16) and through
Triton (torch.compile of the fused chain). Writes the table with the device
and the date to bench/results/gpu-<device>-<date>.md and to the
"## NVIDIA GPU" and "## Vulkan on the NVIDIA GPU" sections of
docs/performance.md.

    python3 bench/compare_gpu.py --bench PATH/zyntax_gpu_bench [--results DIR] [--performance FILE]
    python3 bench/compare_gpu.py --tune ...   the products tuned on the GPU against cuBLAS ("## CUDA tuning")
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
GPU_HEADER = "## NVIDIA GPU"


def ours(bench, device=None, extra=()):
    # A benchmark that fails part-way keeps what it measured before: the
    # table shows the rest as missing and the error is printed and kept.
    try:
        p = subprocess.run([bench] + ([device] if device else []) + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900)
        out, err, rc = p.stdout.decode(), p.stderr.decode(), p.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = (e.stdout or b"").decode(), "timed out after 900 s", -1
    rows, device = {}, {}
    for line in out.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if "name" in obj:
            rows[obj["name"]] = obj["value"]
            if "note" in obj:
                rows.setdefault("notes", {})[obj["name"]] = obj["note"]
        else:
            device = obj
    if rc == 77:  # no such device here
        rows["missing"] = err.strip()[-500:]
    elif rc != 0:
        rows["error"] = "zyntax_gpu_bench exited %d: %s" % (rc, err[-1500:])
        print(rows["error"], file=sys.stderr)
    return rows, device


def torch_anchors(products_only=False):
    import torch
    import torch.nn.functional as F
    dev = torch.device("cuda:0")
    torch.manual_seed(0)

    def timed(fn, reps=10):
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        return sorted(times)[len(times) // 2]

    r = {"torch": torch.__version__}
    n = 1 << 26
    x = torch.randn(n, device=dev)
    y = torch.empty_like(x)
    r["torch_copy"] = 2 * n * 4 / (timed(lambda: y.copy_(x)) / 1e3) / 1e9
    pinned = torch.empty(256 << 18, dtype=torch.float32).pin_memory()
    dbuf = torch.empty_like(pinned, device=dev)
    r["torch_pinned_h2d"] = pinned.numel() * 4 / (timed(lambda: dbuf.copy_(pinned, non_blocking=True)) / 1e3) / 1e9
    r["torch_pinned_d2h"] = pinned.numel() * 4 / (timed(lambda: pinned.copy_(dbuf, non_blocking=True)) / 1e3) / 1e9
    s = 4096
    a, b = torch.randn(s, s, device=dev), torch.randn(s, s, device=dev)
    flops = 2.0 * s ** 3
    # Products: the median of 30 runs each.
    torch.backends.cuda.matmul.allow_tf32 = False
    r["torch_matmul_f32"] = flops / (timed(lambda: a @ b, 30) / 1e3) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = True
    r["torch_matmul_tf32"] = flops / (timed(lambda: a @ b, 30) / 1e3) / 1e12
    r["torch_matmul_tf32_bt"] = flops / (timed(lambda: a @ b.T, 30) / 1e3) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = False
    ab, bb = a.bfloat16(), b.bfloat16()
    r["torch_matmul_bf16"] = flops / (timed(lambda: ab @ bb, 30) / 1e3) / 1e12
    ah, bh16 = a.half(), b.half()
    r["torch_matmul_f16"] = flops / (timed(lambda: torch.mm(ah, bh16), 30) / 1e3) / 1e12
    if products_only:
        r["gpu"] = torch.cuda.get_device_name(0)
        return r
    sm = torch.randn(16 * 2048, 2048, device=dev)
    r["torch_softmax_ms"] = timed(lambda: torch.softmax(sm, dim=-1))
    ln, g, bias = torch.randn(4096, 768, device=dev), torch.randn(768, device=dev), torch.randn(768, device=dev)
    r["torch_layernorm_ms"] = timed(lambda: F.layer_norm(ln, (768,), g, bias, 1e-5))
    for bh, sq in [(96, 128), (12, 4096)]:
        q, k, v = (torch.randn(bh, sq, 64, device=dev) for _ in range(3))
        eager = lambda: torch.softmax(q @ k.transpose(-1, -2) / 8.0, dim=-1) @ v
        r["torch_attention_eager_%dx%d_ms" % (bh, sq)] = timed(eager, 5)
        r["torch_sdpa_%dx%d_ms" % (bh, sq)] = timed(lambda: F.scaled_dot_product_attention(q, k, v), 5)
    # bf16 attention at seq 4096 (12 heads; zyntax's [12, 4096, d] as [1, 12, 4096, d]) through
    # SDPA's flash backend, beside zyntax's bf16 flash attention.
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        for d in (64, 128):
            q, k, v = (torch.randn(1, 12, 4096, d, device=dev, dtype=torch.bfloat16) for _ in range(3))
            for causal in (False, True):
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    ms = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), 5)
                r["torch_sdpa_flash_bf16_12x4096_d%d%s_ms" % (d, "_causal" if causal else "")] = ms
    except Exception as e:  # noqa: BLE001 - report, do not fail the run
        r["sdpa_flash_error"] = str(e)[:200]
    eg, ids = torch.randn(4096, 768, device=dev), torch.randint(0, 30522, (4096,), device=dev)
    table = torch.zeros(30522, 768, device=dev)
    r["torch_index_add_ms"] = timed(lambda: table.index_add_(0, ids, eg))
    fx, fy = torch.randn(n, device=dev), torch.randn(n, device=dev)

    def chain(x, y):
        v = x * 1.702 + 0.5
        return v * torch.sigmoid(v) * torch.tanh(y)
    r["torch_fused_chain_eager_ms"] = timed(lambda: chain(fx, fy))
    try:
        compiled = torch.compile(chain)
        r["triton_fused_chain_ms"] = timed(lambda: compiled(fx, fy))
    except Exception as e:  # noqa: BLE001 - report, do not fail the run
        r["triton_error"] = str(e)[:200]
    r["gpu"] = torch.cuda.get_device_name(0)
    return r


def fmt(v, digits=3):
    return "—" if v is None else ("%.*g" % (digits, v))


def table(z, t, device):
    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b
    rows = [
        ("kernel launch (host, async)", fmt(z.get("launch_latency")) + " µs", "—", "< 5 µs"),
        ("empty kernel round trip", fmt(z.get("empty_kernel_round_trip")) + " µs", "—", "< 10 µs"),
        ("cached module lookup", fmt(z.get("cached_module_lookup")) + " µs", "—", "< 1 µs"),
        ("pinned H2D", fmt(z.get("pinned_h2d")) + " GB/s", fmt(t.get("torch_pinned_h2d")) + " GB/s", "≥ 12 GB/s"),
        ("pinned D2H", fmt(z.get("pinned_d2h")) + " GB/s", fmt(t.get("torch_pinned_d2h")) + " GB/s", "≥ 12 GB/s"),
        ("device copy (zyntax kernel; driver memcpy %s GB/s)" % fmt(z.get("device_copy_driver")),
         fmt(z.get("zyntax_copy")) + " GB/s", fmt(t.get("torch_copy")) + " GB/s (torch copy_)",
         "≥ 80%%: %s" % fmt(ratio(z.get("zyntax_copy"), t.get("torch_copy")))),
        ("matmul f32 4096", fmt(z.get("zyntax_matmul_f32_4096")) + " TFLOP/s", fmt(t.get("torch_matmul_f32")) + " TFLOP/s",
         "≥ 1.1×: %s" % fmt(ratio(z.get("zyntax_matmul_f32_4096"), t.get("torch_matmul_f32")))),
        ("matmul tf32 4096", fmt(z.get("zyntax_matmul_tf32_4096")) + " TFLOP/s", fmt(t.get("torch_matmul_tf32")) + " TFLOP/s",
         "≥ 1.1×: %s" % fmt(ratio(z.get("zyntax_matmul_tf32_4096"), t.get("torch_matmul_tf32")))),
        ("matmul tf32 4096, B as [N, K]", fmt(z.get("zyntax_matmul_tf32_bt_4096")) + " TFLOP/s", fmt(t.get("torch_matmul_tf32_bt")) + " TFLOP/s",
         "≥ 1.1×: %s" % fmt(ratio(z.get("zyntax_matmul_tf32_bt_4096"), t.get("torch_matmul_tf32_bt")))),
        ("matmul bf16 4096", fmt(z.get("zyntax_matmul_bf16_4096")) + " TFLOP/s", fmt(t.get("torch_matmul_bf16")) + " TFLOP/s",
         "≥ 1.1×: %s" % fmt(ratio(z.get("zyntax_matmul_bf16_4096"), t.get("torch_matmul_bf16")))),
        ("matmul bf16 4096, bf16 output", fmt(z.get("zyntax_matmul_bf16_out_4096")) + " TFLOP/s", fmt(t.get("torch_matmul_bf16")) + " TFLOP/s",
         "≥ 1.1×: %s" % fmt(ratio(z.get("zyntax_matmul_bf16_out_4096"), t.get("torch_matmul_bf16")))),
        ("matmul f16 4096 (f32 sums)", fmt(z.get("zyntax_matmul_f16_4096")) + " TFLOP/s", fmt(t.get("torch_matmul_f16")) + " TFLOP/s",
         "≥ 1.1×: %s" % fmt(ratio(z.get("zyntax_matmul_f16_4096"), t.get("torch_matmul_f16")))),
        ("softmax 32768×2048", fmt(z.get("zyntax_softmax_2048_ms")) + " ms", fmt(t.get("torch_softmax_ms")) + " ms",
         "≥ 1.0×: %s" % fmt(ratio(t.get("torch_softmax_ms"), z.get("zyntax_softmax_2048_ms")))),
        ("layernorm 4096×768", fmt(z.get("zyntax_layernorm_4096x768_ms")) + " ms", fmt(t.get("torch_layernorm_ms")) + " ms",
         "≥ 1.0×: %s" % fmt(ratio(t.get("torch_layernorm_ms"), z.get("zyntax_layernorm_4096x768_ms")))),
    ]
    # The warpgroup products by tuning choice, one block per cluster and
    # pairs of blocks sharing B's tiles, timed in turns.
    for key, what, anchor in [("bf16", "bf16", "torch_matmul_bf16"), ("bf16_out", "bf16, bf16 output", "torch_matmul_bf16"),
                              ("f16", "f16 (f32 sums)", "torch_matmul_f16"), ("tf32", "tf32", "torch_matmul_tf32"),
                              ("tf32_bt", "tf32, B as [N, K]", "torch_matmul_tf32_bt")]:
        for cluster, how in [(1, "one block per cluster"), (2, "pairs of blocks sharing B's tiles")]:
            zv = z.get("zyntax_matmul_%s_cluster%d_4096" % (key, cluster))
            if zv is None:
                continue
            rows.append(("matmul %s 4096, cluster=%d (%s)" % (what, cluster, how), fmt(zv) + " TFLOP/s",
                         fmt(t.get(anchor)) + " TFLOP/s", "≥ 1.0×: %s" % fmt(ratio(zv, t.get(anchor)))))
    for bh, sq in [(96, 128), (12, 4096)]:
        e, f = t.get("torch_attention_eager_%dx%d_ms" % (bh, sq)), t.get("torch_sdpa_%dx%d_ms" % (bh, sq))
        for key, blocks in [("attention", 32), ("attention64", 64)]:
            zt = z.get("zyntax_%s_%dx%d_ms" % (key, bh, sq))
            rows.append(("attention %d heads×seq %d, d 64, f32 (flash, blocks of %d)" % (bh, sq, blocks), fmt(zt) + " ms",
                         "eager %s ms, SDPA %s ms" % (fmt(e), fmt(f)),
                         "≥ 1.5× eager: %s; ≥ 1.0× SDPA: %s" % (fmt(ratio(e, zt)), fmt(ratio(f, zt)))))
    for d in (64, 128):
        for causal in (False, True):
            key = "12x4096_d%d%s_ms" % (d, "_causal" if causal else "")
            zt, f = z.get("zyntax_attention_bf16_" + key), t.get("torch_sdpa_flash_bf16_" + key)
            rows.append(("attention 12 heads×seq 4096, d %d, bf16%s (flash, blocks of 64; f32 output)" % (
                d, ", causal" if causal else ""), fmt(zt) + " ms", "SDPA flash %s ms" % fmt(f),
                "≥ 1.0× SDPA flash: %s" % fmt(ratio(f, zt))))
            zt = z.get("zyntax_attention_bf16_tf32_" + key)
            rows.append(("attention 12 heads×seq 4096, d %d, bf16%s, @precision(tf32) (flash, blocks of 64; f32 output)" % (
                d, ", causal" if causal else ""), fmt(zt) + " ms", "SDPA flash %s ms" % fmt(f),
                "≥ 1.0× SDPA flash: %s" % fmt(ratio(f, zt))))
            zt = z.get("zyntax_attention_bf16_wg_" + key)
            rows.append(("attention 12 heads×seq 4096, d %d, bf16%s, @precision(bf16) (warpgroup attention; f32 output)" % (
                d, ", causal" if causal else ""), fmt(zt) + " ms", "SDPA flash %s ms" % fmt(f),
                "≥ 1.0× SDPA flash: %s" % fmt(ratio(f, zt))))
    ze = z.get("zyntax_embedding_grad_ms")
    rows.append(("embedding gradient, 4096×768 into 30522 rows", fmt(ze) + " ms",
                 "index_add_ %s ms" % fmt(t.get("torch_index_add_ms")),
                 "≥ 1.0×: %s" % fmt(ratio(t.get("torch_index_add_ms"), ze))))
    zf = z.get("zyntax_fused_chain_ms")
    rows.append(("fused chain, 2^26 elements", fmt(zf) + " ms",
                 "eager %s ms, torch.compile (Triton) %s ms" % (fmt(t.get("torch_fused_chain_eager_ms")),
                                                                fmt(t.get("triton_fused_chain_ms"))),
                 "≥ 2× eager: %s" % fmt(ratio(t.get("torch_fused_chain_eager_ms"), zf))))
    out = [GPU_HEADER, "",
           "- Device: %s (%s)" % (t.get("gpu", device.get("device", "?")), device.get("backend", "?")),
           "- Date: %s; host %s" % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), platform.platform()),
           "- Measured by `bench/compare_gpu.py` in one run: zyntax_gpu_bench (CUDA events around each kernel, inputs' "
           "copies excluded, median) and PyTorch %s in the same run." % t.get("torch", "?"),
           "", "| what | zyntax | anchor | target: measured |", "|---|---|---|---|"]
    out += ["| %s | %s | %s | %s |" % r for r in rows]
    out += ["", "Paths: on sm_90a (H100, H200) bf16, f16 and TF32 products whose factors the tensor copy engine "
            "can read run as warpgroup products (TMA, mbarriers, wgmma, a persistent grid); TF32 with B as [K, N] "
            "is computed transposed (out^T = B^T A^T), B's tiles read into registers; f32 products run on the "
            "CUDA-core schedule. The bf16 matmul rows without \"bf16 output\" write f32 (torch writes bf16). "
            "The bf16 attention rows marked @precision(bf16) run as one warpgroup attention kernel (query tiles "
            "of 128 rows and a two-stage ring of 128-key tiles brought by the tensor copy engine, Q K^T and P V on "
            "wgmma, the online softmax in registers, P rounded to bf16). The other bf16 attention rows run the tile "
            "schedule on widened tiles, Q K^T on tensor cores (wmma, TF32 factors that hold the bf16 values "
            "exactly), P V too under @precision(tf32) (P rounded to TF32), the softmax between them through shared "
            "memory; torch's anchors write bf16, zyntax's f32."]
    if "error" in z:
        out += ["", "The zyntax benchmark stopped early: `%s`" % z["error"].strip().splitlines()[-1][:300]]
    return "\n".join(out) + "\n"


VULKAN_HEADER = "## Vulkan on the NVIDIA GPU"
TUNING_HEADER = "## CUDA tuning"


def tuning_table(z, t, device):
    """The products' plans tuned on the GPU (zyntax_gpu_bench --tune: the
    tuner's search, then the rules' plan and the tuned one timed in turns)
    beside cuBLAS through PyTorch in the same run."""
    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b
    notes = z.get("notes", {})
    out = [TUNING_HEADER, "",
           "- Device: %s (%s)" % (t.get("gpu", device.get("device", "?")), device.get("backend", "?")),
           "- Date: %s; host %s" % (datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), platform.platform()),
           "- Measured by `bench/compare_gpu.py --tune` in one run: zyntax_gpu_bench --tune (the tuner's search on the "
           "GPU, then the rules' plan and the tuned one in turns, CUDA events, median) and PyTorch %s (cuBLAS) in the "
           "same run." % t.get("torch", "?"),
           "", "| product (4096) | rules TFLOP/s | tuned TFLOP/s | tuned choice | cuBLAS TFLOP/s | rules / cuBLAS | tuned / cuBLAS |",
           "|---|---|---|---|---|---|---|"]
    for key, what, anchor in [("f32", "f32", "torch_matmul_f32"), ("tf32", "tf32", "torch_matmul_tf32"),
                              ("tf32_bt", "tf32, B as [N, K]", "torch_matmul_tf32_bt"), ("bf16", "bf16 (f32 output)", "torch_matmul_bf16"),
                              ("bf16_out", "bf16, bf16 output", "torch_matmul_bf16"), ("f16", "f16 (f32 output)", "torch_matmul_f16")]:
        rules, tuned = z.get("zyntax_matmul_%s_rules_4096" % key), z.get("zyntax_matmul_%s_tuned_4096" % key)
        if rules is None and tuned is None:
            continue
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            what, fmt(rules), fmt(tuned), notes.get("zyntax_matmul_%s_tuned_4096" % key, "—"), fmt(t.get(anchor)),
            fmt(ratio(rules, t.get(anchor))), fmt(ratio(tuned, t.get(anchor)))))
    if "error" in z:
        out += ["", "The zyntax benchmark stopped early: `%s`" % z["error"].strip().splitlines()[-1][:300]]
    if "missing" in z:
        out += ["", "Not measured: %s" % z["missing"][:300]]
    return "\n".join(out) + "\n"


def vulkan_table(v, vdevice, z, t):
    """The same kernels through the Vulkan backend (the first Vulkan GPU:
    NVIDIA's Vulkan driver) beside cuda:0 and PyTorch on the same GPU."""
    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b
    out = [VULKAN_HEADER, ""]
    if "missing" in v or not vdevice:
        out += ["No Vulkan GPU on this machine: `%s`" % v.get("missing", "?").splitlines()[-1][:300] if v.get("missing") else
                "No Vulkan GPU on this machine."]
        return "\n".join(out) + "\n"
    out += ["- Device: %s (%s)" % (vdevice.get("device", "?"), vdevice.get("backend", "?")),
            "- Date: %s; measured by `bench/compare_gpu.py` in the same run as the section above: zyntax_gpu_bench "
            "on %s (the queue's timestamps around each dispatch, copies excluded, median)." % (
                datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), vdevice.get("id", "?")),
            "", "| what | Vulkan | cuda:0 | PyTorch | speed, Vulkan / cuda:0 |", "|---|---|---|---|---|"]
    rate_rows = [("device copy", "zyntax_copy", "GB/s", "torch_copy"),
                 ("matmul f32 4096", "zyntax_matmul_f32_4096", "TFLOP/s", "torch_matmul_f32"),
                 ("matmul tf32 4096", "zyntax_matmul_tf32_4096", "TFLOP/s", "torch_matmul_tf32"),
                 ("matmul bf16 4096", "zyntax_matmul_bf16_4096", "TFLOP/s", "torch_matmul_bf16"),
                 ("matmul bf16 4096, bf16 output", "zyntax_matmul_bf16_out_4096", "TFLOP/s", "torch_matmul_bf16"),
                 ("matmul tf32 4096, B as [N, K]", "zyntax_matmul_tf32_bt_4096", "TFLOP/s", "torch_matmul_tf32_bt"),
                 ("matmul f16 4096", "zyntax_matmul_f16_4096", "TFLOP/s", "torch_matmul_f16")]
    for what, key, unit, anchor in rate_rows:
        out.append("| %s | %s %s | %s %s | %s %s | %s |" % (what, fmt(v.get(key)), unit, fmt(z.get(key)), unit, fmt(t.get(anchor)), unit,
                                                          fmt(ratio(v.get(key), z.get(key)))))
    time_rows = [("fused chain, 2^26 elements", "zyntax_fused_chain_ms", "torch_fused_chain_eager_ms"),
                 ("softmax 32768×2048", "zyntax_softmax_2048_ms", "torch_softmax_ms"),
                 ("layernorm 4096×768", "zyntax_layernorm_4096x768_ms", "torch_layernorm_ms"),
                 ("embedding gradient", "zyntax_embedding_grad_ms", "torch_index_add_ms")]
    for bh, sq in [(96, 128), (12, 4096)]:
        time_rows.append(("attention %d×%d (blocks of 32)" % (bh, sq), "zyntax_attention_%dx%d_ms" % (bh, sq), "torch_sdpa_%dx%d_ms" % (bh, sq)))
    for d in (64, 128):
        for causal in (False, True):
            key = "12x4096_d%d%s_ms" % (d, "_causal" if causal else "")
            time_rows.append(("attention bf16 12×4096, d %d%s" % (d, ", causal" if causal else ""), "zyntax_attention_bf16_" + key,
                              "torch_sdpa_flash_bf16_" + key))
    for what, key, anchor in time_rows:
        # times: the speed ratio is cuda's time over vulkan's
        out.append("| %s | %s ms | %s ms | %s ms | %s |" % (what, fmt(v.get(key)), fmt(z.get(key)), fmt(t.get(anchor)),
                                                        fmt(ratio(z.get(key), v.get(key)))))
    if "error" in v:
        out += ["", "The Vulkan benchmark stopped early: `%s`" % v["error"].strip().splitlines()[-1][:300]]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "zyntax_gpu_bench"))
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--performance", default=os.path.join(ROOT, "docs", "performance.md"))
    ap.add_argument("--no-vulkan", action="store_true", help="leave the Vulkan section out (and as it was in the document)")
    ap.add_argument("--tune", action="store_true",
                    help="the products' tuned plans against cuBLAS alone, into the \"CUDA tuning\" section")
    args = ap.parse_args()
    if args.tune:
        z, device = ours(args.bench, None, ["--tune"])
        t = torch_anchors(products_only=True)
        text = tuning_table(z, t, device)
        print(text)
        os.makedirs(args.results, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9]+", "-", t.get("gpu", "gpu")).strip("-").lower()
        with open(os.path.join(args.results, "gpu-tuning-%s-%s.md" % (name, datetime.date.today().isoformat())), "w") as f:
            f.write(text + "\nRaw:\n\n```\n" + json.dumps({"zyntax": z, "anchors": t}, indent=1) + "\n```\n")
        sys.path.insert(0, HERE)
        import performance_doc
        performance_doc.replace_sections(args.performance, ["CUDA tuning"], text)
        return
    z, device = ours(args.bench)
    v, vdevice = ({"missing": "not run (--no-vulkan)"}, {}) if args.no_vulkan else ours(args.bench, "vulkan")
    t = torch_anchors()
    text = table(z, t, device) + ("" if args.no_vulkan else "\n" + vulkan_table(v, vdevice, z, t))
    print(text)
    os.makedirs(args.results, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9]+", "-", t.get("gpu", "gpu")).strip("-").lower()
    path = os.path.join(args.results, "gpu-%s-%s.md" % (name, datetime.date.today().isoformat()))
    with open(path, "w") as f:
        f.write(text + "\nRaw:\n\n```\n" + json.dumps({"zyntax": z, "vulkan": v, "anchors": t}, indent=1) + "\n```\n")
    sys.path.insert(0, HERE)
    import performance_doc
    performance_doc.replace_sections(args.performance, ["NVIDIA GPU"] + ([] if args.no_vulkan else ["Vulkan on the NVIDIA GPU"]), text)


if __name__ == "__main__":
    main()
