#!/usr/bin/env python3
"""Every program of tests/programs compiles to HSA code objects for each AMD
architecture (`zyntax compile --backend rocm --arch A --sizes-from-run -o
F.hsaco`, where one of its cases' inputs lie), and each kernel's notes
(llvm-readobj --notes) hold what the HIP runtime needs: the architecture's
wave size, no registers spilled to scratch memory, LDS within the 64 KiB a
workgroup has, a workgroup size of at most 1024 work-items in whole waves,
and the status word as the last argument the host packs. Kernels the
planner leaves out say why in a comment; a program whose every kernel is
left out fails.

    /usr/bin/python3 tests/cli/test_programs_rocm.py --zyntax build/zyntax"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import yaml

from program_cases import compile_in_case_dirs, program_names

ARCHS = {"gfx90a": 64, "gfx942": 64, "gfx1100": 32}
LDS_BYTES = 64 * 1024


class MetadataLoader(yaml.SafeLoader):
    """YAML as LLVM writes the metadata: names YAML would read as numbers or
    booleans are tagged !str."""


MetadataLoader.add_constructor("!str", lambda loader, node: loader.construct_scalar(node))


def kernel_notes(readobj, path):
    """The amdhsa.kernels entries of a code object's metadata note."""
    p = subprocess.run([readobj, "--notes", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("%s --notes %s: %s" % (readobj, path, p.stderr.decode()))
    text = p.stdout.decode()
    m = re.search(r"AMDGPU Metadata: (---\n.*?\n\.\.\.)", text, re.S)
    if not m:
        raise RuntimeError("no AMDGPU metadata note in " + path)
    meta = yaml.load(m.group(1), Loader=MetadataLoader)
    return meta["amdhsa.target"], meta["amdhsa.kernels"]


def check_kernel(k, arch, wave):
    problems = []
    name = k[".name"]
    if k[".wavefront_size"] != wave:
        problems.append("%s: wave size %d, not %d" % (name, k[".wavefront_size"], wave))
    # Scratch holds what registers cannot: spilled registers (a problem) or
    # an array the kernel declares per work-item (its own choice).
    if k.get(".vgpr_spill_count", 0) != 0:
        problems.append("%s: %d VGPRs spilled to scratch" % (name, k[".vgpr_spill_count"]))
    if k[".group_segment_fixed_size"] > LDS_BYTES:
        problems.append("%s: %d bytes of LDS, more than %d" % (name, k[".group_segment_fixed_size"], LDS_BYTES))
    threads = k[".max_flat_workgroup_size"]
    if not (wave <= threads <= 1024 and threads % wave == 0):
        problems.append("%s: workgroups of %d work-items" % (name, threads))
    args = [a for a in k.get(".args", []) if not a[".value_kind"].startswith("hidden_")]
    if not args or args[-1].get(".name") != "status" or args[-1][".value_kind"] != "global_buffer":
        problems.append("%s: the last argument is not the status word" % name)
    offsets = [a[".offset"] for a in args]
    if offsets != sorted(offsets) or len(set(offsets)) != len(offsets):
        problems.append("%s: argument offsets out of order %s" % (name, offsets))
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zyntax", required=True)
    ap.add_argument("--readobj", default="llvm-readobj-19")
    args = ap.parse_args()
    zyntax = os.path.abspath(args.zyntax)
    failures, counts, left_out = [], {a: 0 for a in ARCHS}, set()
    with tempfile.TemporaryDirectory() as tmp:
        for name in program_names():
            for arch, wave in ARCHS.items():
                out_file = os.path.join(tmp, "%s.%s.hsaco" % (name, arch))
                rc, out, err = compile_in_case_dirs(zyntax, name, tmp, ["--backend", "rocm", "--arch", arch, "-o", out_file])
                if rc == 2 and "has no compute blocks" in err:
                    continue
                if rc != 0:
                    failures.append("%s (%s): exit %d: %s" % (name, arch, rc, err[-2000:]))
                    continue
                left_out.update((name, k, why) for k, why in re.findall(r"// kernel (\S+): not compiled for the GPU \((.*)\)", err))
                if not os.path.exists(out_file) or os.path.getsize(out_file) == 0:
                    failures.append("%s (%s): no code object written" % (name, arch))
                    continue
                target, kernels = kernel_notes(args.readobj, out_file)
                if target != "amdgcn-amd-amdhsa--" + arch:
                    failures.append("%s (%s): a code object for %s" % (name, arch, target))
                for k in kernels:
                    failures += ["%s (%s): %s" % (name, arch, p) for p in check_kernel(k, arch, wave)]
                counts[arch] += len(kernels)
                for k in kernels:
                    if k[".private_segment_fixed_size"]:
                        print("note %s (%s): %s keeps %d bytes per work-item in scratch (its private arrays)"
                              % (name, arch, k[".name"], k[".private_segment_fixed_size"]))
            print("ok   %s" % name)
    for name, k, why in sorted(left_out):
        print("not compiled: %s %s (%s)" % (name, k, why))
    print("kernels in code objects: " + ", ".join("%s %d" % (a, n) for a, n in counts.items()))
    for f in failures:
        print("FAIL", f)
    return 1 if failures or min(counts.values()) == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
