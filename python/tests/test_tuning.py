"""Schedule tuning from Python: ZYNTAX_TUNE=on tunes the kernels a script
calls and records them; the next process (cached, the default) uses the
records and gives the same results; off ignores them."""
import json
import os
import subprocess
import sys
import tempfile

from conftest import BUILT

SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, %r)
import zyntax
prog = zyntax.compile('''
def mm(a: tensor[m, k, f32], b: tensor[k, n, f32]) {
    return compute(a, b) {
        @kernel matmul
        for i in 0..m, j in 0..n:
            var s = 0.0
            for p in 0..k:
                s += a[i, p] * b[p, j]
            out[i, j] = s
    }
}
''', device="cpu")
rng = np.random.default_rng(3)
a = rng.standard_normal((3, 300), dtype=np.float32)
b = rng.standard_normal((300, 200), dtype=np.float32)
out = prog.mm(a, b)
out = prog.mm(a, b)  # the second call as well: after the search
np.save(sys.argv[1], out)
assert np.allclose(out, a @ b, rtol=1e-4, atol=1e-3)
"""


def run(mode, cache, out):
    env = dict(os.environ, ZYNTAX_TUNE=mode, ZYNTAX_CACHE_DIR=cache)
    return subprocess.run([sys.executable, "-c", SCRIPT % os.path.abspath(BUILT), out], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)


def test_tune_on_records_and_cached_uses_the_records():
    import numpy as np
    with tempfile.TemporaryDirectory() as cache:
        records = os.path.join(cache, "tuning", "records.jsonl")
        p = run("on", cache, os.path.join(cache, "on.npy"))
        assert p.returncode == 0, p.stderr.decode()
        lines = [json.loads(l) for l in open(records)]
        assert len(lines) == 1 and lines[0]["shapes"] == "f32[3,300] f32[300,200] -> f32[3,200]"
        assert lines[0]["timed"] >= 2 and lines[0]["default_ms"] > 0
        before = open(records).read()
        p = run("cached", cache, os.path.join(cache, "cached.npy"))
        assert p.returncode == 0, p.stderr.decode()
        assert open(records).read() == before  # nothing tuned again
        p = run("off", cache, os.path.join(cache, "off.npy"))
        assert p.returncode == 0, p.stderr.decode()
        on, cached, off = (np.load(os.path.join(cache, n + ".npy")) for n in ("on", "cached", "off"))
        assert np.allclose(on, off, rtol=1e-5, atol=1e-4) and np.allclose(cached, off, rtol=1e-5, atol=1e-4)


def test_a_bad_mode_is_a_warning():
    with tempfile.TemporaryDirectory() as cache:
        p = run("sometimes", cache, os.path.join(cache, "x.npy"))
        assert p.returncode == 0, p.stderr.decode()
        assert b"ZYNTAX_TUNE='sometimes' is not off, cached or on" in p.stderr
