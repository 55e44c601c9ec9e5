import os
import sys

# The built package (build/python), unless the caller points elsewhere.
HERE = os.path.dirname(os.path.abspath(__file__))
BUILT = os.environ.get("ZYNTAX_PYTHON_DIR", os.path.join(HERE, "..", "..", "build", "python"))
sys.path.insert(0, os.path.abspath(BUILT))


def devices_under_test(default):
    """The device ids a test runs on: ZYNTAX_TEST_DEVICES (comma-separated,
    e.g. "cpu,cuda:0") where set, else `default`."""
    listed = os.environ.get("ZYNTAX_TEST_DEVICES", "").strip()
    if not listed:
        return list(default)
    return [d.strip() for d in listed.split(",") if d.strip()]
