import os
import sys

# The built package (build/python), unless the caller points elsewhere.
HERE = os.path.dirname(os.path.abspath(__file__))
BUILT = os.environ.get("ZYNTAX_PYTHON_DIR", os.path.join(HERE, "..", "..", "build", "python"))
sys.path.insert(0, os.path.abspath(BUILT))


# A kernel several test files call: x * by + y over a matrix.
SCALE_ADD = """
def scale_add(x: tensor[n, m, f32], y: tensor[n, m, f32], by: f32) {
    return compute(x, y) {
        @kernel elementwise
        for i in 0..n, j in 0..m:
            out[i, j] = x[i, j] * by + y[i, j]
    }
}
"""


def devices_under_test(default):
    """The device ids a test runs on: ZYNTAX_TEST_DEVICES (comma-separated,
    e.g. "cpu,cuda:0") where set, else `default`."""
    listed = os.environ.get("ZYNTAX_TEST_DEVICES", "").strip()
    if not listed:
        return list(default)
    return [d.strip() for d in listed.split(",") if d.strip()]
