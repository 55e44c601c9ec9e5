"""The Python package installs as a user installs it, and runs.

Into a fresh virtual environment (with the system's NumPy and PyTorch):
`pip install --no-build-isolation --no-index <source>` (offline, Debian's
setuptools and wheel), then, from a directory outside the source tree,
`import zyntax` runs a kernel against NumPy. The installed extension needs
neither LLVM's shared library nor libzyntax. `python3 -m build --no-isolation
--wheel` makes a wheel of the same package.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import zipfile

CHECK = r'''
import os, sys
import numpy as np
import zyntax
assert zyntax.__file__.startswith(sys.prefix), (zyntax.__file__, sys.prefix)
prog = zyntax.compile("""
def scale_add(x: tensor[n, f32], y: tensor[n, f32], by: f32) {
    return compute(x, y) {
        @kernel elementwise
        for i in 0..n:
            out[i] = x[i] * by + y[i]
    }
}
""", device="cpu")
rng = np.random.default_rng(7)
for n in (1, 17, 1000, 4099):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    got = np.asarray(prog.scale_add(x, y, 1.5))
    np.testing.assert_allclose(got, x * np.float32(1.5) + y, rtol=1e-6, atol=1e-6)
print("ok", zyntax.__file__)
'''


def run(command, **kw):
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, **kw)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stdout or ''}{done.stderr or ''}")
    return done


def needed_libraries(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return [line.split("[")[1].split("]")[0] for line in out.splitlines() if "(NEEDED)" in line]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build-dir", required=True)
    args = ap.parse_args()
    args.source = os.path.abspath(args.source)
    env = dict(os.environ, ZYNTAX_BUILD_DIR=args.build_dir, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory() as tmp:
        venv = os.path.join(tmp, "v")
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
        python = os.path.join(venv, "bin", "python")
        run([python, "-m", "pip", "install", "-q", "--no-build-isolation", args.source], env=env)
        out = run([python, "-c", CHECK], env=env, cwd=tmp, capture_output=True, text=True).stdout
        print(out, end="")
        assert out.startswith("ok"), out
        # The installed extension: self-contained but for the C and C++ runtimes.
        module = out.split()[1].replace("__init__.py", "")
        [ext] = [f for f in os.listdir(module) if f.startswith("_zyntax") and f.endswith(".so")]
        needed = needed_libraries(os.path.join(module, ext))
        print("needed:", needed)
        for lib in needed:
            assert "LLVM" not in lib and "zyntax" not in lib, f"the installed module needs {lib}"
        # A wheel, as `python3 -m build` makes it.
        wheels = os.path.join(tmp, "wheels")
        run(["/usr/bin/python3", "-m", "build", "--no-isolation", "--wheel", "--outdir", wheels, args.source],
            env=env, cwd=tmp, capture_output=True)
        [wheel] = os.listdir(wheels)
        names = zipfile.ZipFile(os.path.join(wheels, wheel)).namelist()
        for want in ("zyntax/__init__.py", "zyntax/torch.py"):
            assert want in names, (want, names)
        assert any(n.startswith("zyntax/_zyntax") for n in names), names
        print("wheel:", wheel)
    print("python package: installed and ran")


if __name__ == "__main__":
    sys.exit(main())
