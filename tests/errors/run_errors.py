#!/usr/bin/python3
"""Error-case tests of zyntax: every diagnostic must be right, and nothing may crash.

For each NAME.zynml in this directory, NAME.expected lists the lines that must
appear in zyntax's stderr. The program is copied into a fresh temporary
directory and run there as `zyntax check NAME.zynml` (or `zyntax run`, see
below), so the diagnostics name it as NAME.zynml.

Format of NAME.expected:
    # comment
    #! command: run          use `zyntax run` instead of `zyntax check`
    #! exit: N               expected exit status (default 1)
    #! absent: TEXT          TEXT must not appear anywhere in stderr
    #! no-file: FILE         the run must not create FILE
    #! host: all             run it in every host tier (--host interp, tiered,
                             compiled): each gives the same diagnostics
    ~TEXT                    TEXT must appear somewhere in stderr
    any other line           must equal a line of stderr (trailing blanks ignored)

Some cases are generated here instead (binary junk, very deep nesting, long
operator chains, a truncated .npy file, ...): see GENERATED and SETUP.

    /usr/bin/python3 tests/errors/run_errors.py [--zyntax PATH] [-k SUBSTRING]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_ZYNTAX = os.path.join(ROOT, "build", "zyntax")
TIMEOUT_S = 60
CRASH_MARKERS = ("Segmentation", "AddressSanitizer", "terminate called", "Aborted",
                 "runtime error:", "LeakSanitizer", "Assertion", "core dumped")
MAX_STDERR = 256 * 1024   # a bad input must not flood the terminal


# ---------------------------------------------------------------------------
# Files that some cases need in their directory
# ---------------------------------------------------------------------------

def setup_truncated_npy(tmp):
    path = os.path.join(tmp, "trunc.npy")
    np.save(path, np.arange(30 * 7, dtype=np.float32).reshape(30, 7))
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2])


def setup_shape_mismatch(tmp):
    np.save(os.path.join(tmp, "A.npy"), np.ones((3, 5), dtype=np.float32))
    np.save(os.path.join(tmp, "B.npy"), np.ones((6, 7), dtype=np.float32))


def setup_loaded_matrix(tmp):
    np.save(os.path.join(tmp, "x.npy"), np.arange(12, dtype=np.float32).reshape(3, 4))


SETUP = {
    "truncated_npy": setup_truncated_npy,
    "shape_mismatch": setup_shape_mismatch,
    "annotations_of_loaded_inputs": setup_loaded_matrix,
    "typed_let_mismatch": setup_loaded_matrix,
}


# ---------------------------------------------------------------------------
# Generated inputs: (name, file bytes, command, check)
# ---------------------------------------------------------------------------

def junk(seed, n):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def must_fail_with(*texts):
    """exit 1, 'error:' and each of texts in stderr."""
    def check(rc, err):
        problems = []
        if rc != 1:
            problems.append("exit status %d, expected 1" % rc)
        for t in ("error:",) + texts:
            if t not in err:
                problems.append("stderr lacks %r" % t)
        return problems
    return check


def must_not_crash(rc, err):
    """Accepting the input or rejecting it with a diagnostic are both fine."""
    if rc == 0:
        return []
    if rc == 1:
        return [] if "error:" in err else ["exit status 1 without an 'error:' line"]
    return ["exit status %d, expected 0 or 1" % rc]


KERNEL_HEAD = ("let x = randn([4], seed=1)\nlet y = compute(x) {\n    @kernel elementwise\n"
               "    for i in 0..len:\n        out[i] = ")
CHAIN = 100000


def npy_header(header, data=b""):
    """A version 1.0 .npy file with the given header dict text."""
    h = header.encode()
    pad = 64 - (10 + len(h) + 1) % 64
    h += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + data


def good_npy():
    import io
    buf = io.BytesIO()
    np.save(buf, np.arange(6, dtype=np.float32))
    return buf.getvalue()


LOAD_PROGRAM = b'let t = load("bad.npy")\nprint(shape(t), t.dtype)\n'


def generated():
    bad_npy = [
        # (name, contents of bad.npy, texts the message must contain)
        ("npy_truncated_header", good_npy()[:20], ["bad.npy", "truncated header"]),
        ("npy_bad_magic", b"\x93NUMPX" + good_npy()[6:], ["bad.npy", "not a .npy file"]),
        ("npy_empty_file", b"", ["bad.npy", "not a .npy file"]),
        ("npy_huge_shape", npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }"),
         ["bad.npy", "truncated"]),
        ("npy_overflowing_shape",
         npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }"),
         ["bad.npy", "too large"]),
        ("npy_negative_shape", npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"),
         ["bad.npy", "-1"]),
        ("npy_unsupported_dtype", npy_header("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", b"\0" * 16),
         ["bad.npy", "unsupported dtype"]),
        ("npy_header_without_shape", npy_header("{'descr': '<f4', 'fortran_order': False, }", b"\0" * 8),
         ["bad.npy", "shape"]),
    ]
    cases = [(name, LOAD_PROGRAM, "run", must_fail_with("load()", *texts), {"bad.npy": data})
             for name, data, texts in bad_npy]
    cases += [
        ("binary_junk", junk(1, 4096), "check", must_fail_with()),
        ("binary_junk_large", junk(2, 1 << 20), "check", must_fail_with()),
        ("binary_junk_run", junk(3, 4096), "run", must_fail_with()),
        ("nul_in_program", b"let x = 1\nprint(x\x00)\n", "check", must_fail_with()),
        ("invalid_utf8_string", b'let s = "\xff\xfe\xc3"\nlet t = \x80\n', "check", must_fail_with()),
        # a byte that is not UTF-8 is named by its value, not shown as '?'
        ("invalid_utf8_byte", b"let t = 1 \x80 2\n", "check", must_fail_with("0x80")),
        ("nested_parens_1mb", b"(" * (1 << 20), "check", must_fail_with("nesting is too deep")),
        ("nested_parens_closed", b"let x = " + b"(" * 500000 + b"1" + b")" * 500000 + b"\n", "check",
         must_fail_with("nesting is too deep")),
        ("nested_brackets_1mb", b"let x = " + b"[" * (1 << 20), "check", must_fail_with("nesting is too deep")),
        ("nested_braces_1mb", b"let x = " + b"{" * (1 << 20), "check", must_fail_with()),
        ("nested_unary_1mb", b"let x = " + b"-" * (1 << 20) + b"1\n", "check", must_fail_with("nesting is too deep")),
        ("nested_parens_kernel", (KERNEL_HEAD + "(" * 100000 + "x[i]" + ")" * 100000 + "\n}\n").encode(),
         "check", must_fail_with("nesting is too deep")),
        ("nested_blocks", b"".join(b" " * i + b"if true:\n" for i in range(3000)) + b" " * 3000 + b"print(1)\n",
         "run", must_not_crash),
        ("nested_blocks_past_the_limit", b"if true {\n" * 12000 + b"print(1)\n" + b"}\n" * 12000,
         "check", must_fail_with("nesting is too deep")),
        # Long left-associative chains are not nesting in the source, but a
        # recursive checker sees them as a deep tree.
        ("chain_plus_host", ("let x = 1" + " + 1" * CHAIN + "\nprint(x)\n").encode(), "run", must_not_crash),
        ("chain_and_host", ("let x = true" + " and true" * CHAIN + "\nprint(x)\n").encode(), "run", must_not_crash),
        ("chain_plus_kernel", (KERNEL_HEAD + "x[i]" + " + x[i]" * CHAIN + "\n}\nprint(y)\n").encode(), "run",
         must_not_crash),
        ("chain_index", ("let x = [1]\nlet y = x" + "[0]" * CHAIN + "\n").encode(), "check", must_not_crash),
        ("chain_attr", ("let x = randn([2, 2])\nlet y = x" + ".T" * CHAIN + "\n").encode(), "check", must_not_crash),
        ("chain_call", ("def f(a) { return a }\nlet y = f" + "(1)" * CHAIN + "\n").encode(), "check", must_not_crash),
        ("chain_pipe", ("let y = 1.0" + " |> sqrt()" * CHAIN + "\n").encode(), "check", must_not_crash),
        ("many_statements", ("var x = 0\n" + "x = x + 1\n" * CHAIN + "print(x)\n").encode(), "run", must_not_crash),
    ]
    return [c if len(c) == 5 else c + ({},) for c in cases]


# ---------------------------------------------------------------------------

class Expected:
    def __init__(self, path):
        self.command = "check"
        self.exit = 1
        self.lines = []      # exact lines
        self.contains = []   # substrings
        self.absent = []
        self.no_files = []
        self.hosts = [None]  # the --host tiers to run it in (None: the default)
        with open(path, encoding="utf-8") as f:
            for raw in f.read().splitlines():
                if raw.startswith("#!"):
                    key, _, value = raw[2:].strip().partition(":")
                    key, value = key.strip(), value.strip()
                    if key == "command":
                        self.command = value
                    elif key == "exit":
                        self.exit = int(value)
                    elif key == "absent":
                        self.absent.append(value)
                    elif key == "no-file":
                        self.no_files.append(value)
                    elif key == "host" and value == "all":
                        self.hosts = ["interp", "tiered", "compiled"]
                    else:
                        raise ValueError("%s: unknown directive %r" % (path, raw))
                elif raw.startswith("#") or not raw.strip():
                    continue
                elif raw.startswith("~"):
                    self.contains.append(raw[1:].strip())
                else:
                    self.lines.append(raw.rstrip())


def run_zyntax(zyntax, command, name, tmp, extra=()):
    cmd = [zyntax, command, name] + list(extra)
    try:
        p = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %ds" % TIMEOUT_S
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def crash_problems(rc, out, err):
    problems = []
    if rc is not None and rc < 0:
        problems.append("killed by signal %d" % -rc)
    for m in CRASH_MARKERS:
        if m in err or m in out:
            problems.append("output contains %r" % m)
    if len(err) > MAX_STDERR:
        problems.append("stderr is %d bytes (more than %d)" % (len(err), MAX_STDERR))
    return problems


def run_file_case(zyntax, name):
    exp = Expected(os.path.join(HERE, name + ".expected"))
    with tempfile.TemporaryDirectory(prefix="zyntax_err_") as tmp:
        shutil.copy(os.path.join(HERE, name + ".zynml"), tmp)
        if name in SETUP:
            SETUP[name](tmp)
        problems = []
        for host in exp.hosts:
            extra = ["--host", host] if host else []
            rc, out, err = run_zyntax(zyntax, exp.command, name + ".zynml", tmp, extra)
            found = [] if rc is not None else [err]
            found += crash_problems(rc, out, err)
            if rc is not None and rc != exp.exit:
                found.append("exit status %d, expected %d" % (rc, exp.exit))
            err_lines = set(l.rstrip() for l in err.splitlines())
            for line in exp.lines:
                if line not in err_lines:
                    found.append("missing line: %r" % line)
            for text in exp.contains:
                if text not in err:
                    found.append("missing text: %r" % text)
            for text in exp.absent:
                if text in err:
                    found.append("unexpected text: %r" % text)
            for fname in exp.no_files:
                if os.path.exists(os.path.join(tmp, fname)):
                    found.append("file %s was created" % fname)
            problems += [("--host %s: " % host if host else "") + p for p in found]
        return problems, "zyntax %s %s" % (exp.command, name + ".zynml"), err


def run_generated_case(zyntax, case):
    name, data, command, check, files = case
    with tempfile.TemporaryDirectory(prefix="zyntax_err_") as tmp:
        for other, contents in files.items():
            with open(os.path.join(tmp, other), "wb") as f:
                f.write(contents)
        fname = name + ".zynml"
        with open(os.path.join(tmp, fname), "wb") as f:
            f.write(data)
        rc, out, err = run_zyntax(zyntax, command, fname, tmp)
        if rc is None:
            return [err], "zyntax %s <generated %s>" % (command, fname), ""
        problems = crash_problems(rc, out, err) + check(rc, err)
        return problems, "zyntax %s <generated %s, %d bytes>" % (command, fname, len(data)), err


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zyntax", default=DEFAULT_ZYNTAX, help="the zyntax binary (default: build/zyntax)")
    ap.add_argument("-k", action="append", default=[], metavar="SUBSTRING", help="only cases whose name contains it")
    ap.add_argument("-j", type=int, default=min(2, os.cpu_count() or 1), help="parallel runs")
    ap.add_argument("-v", action="store_true", help="print passing cases and their stderr too")
    args = ap.parse_args()

    zyntax = os.path.abspath(args.zyntax)
    if not os.access(zyntax, os.X_OK):
        print("error: zyntax binary not found: %s" % zyntax, file=sys.stderr)
        return 2

    jobs = []
    for fname in sorted(os.listdir(HERE)):
        if fname.endswith(".zynml"):
            name = fname[:-len(".zynml")]
            if not os.path.exists(os.path.join(HERE, name + ".expected")):
                print("error: %s has no %s.expected" % (fname, name), file=sys.stderr)
                return 2
            jobs.append((name, lambda n=name: run_file_case(zyntax, n)))
    for case in generated():
        jobs.append((case[0], lambda c=case: run_generated_case(zyntax, c)))
    jobs = [j for j in jobs if not args.k or any(k in j[0] for k in args.k)]
    if not jobs:
        print("error: no case matches %s" % args.k, file=sys.stderr)
        return 2

    t0 = time.time()
    failed = []
    with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        for name, (problems, cmd, err) in pool.map(lambda j: (j[0], j[1]()), jobs):
            if problems:
                failed.append(name)
                print("FAIL %s\n  command: %s" % (name, cmd))
                for p in problems:
                    print("  - %s" % p)
                tail = "\n".join(err.splitlines()[:25])
                if tail:
                    print("  --- stderr (first lines) ---\n  " + tail.replace("\n", "\n  "))
            elif args.v:
                print("PASS %s" % name)
                if err:
                    print("  " + "\n  ".join(err.splitlines()[:12]))
            sys.stdout.flush()
    print("\n%d of %d error cases passed in %.1fs" % (len(jobs) - len(failed), len(jobs), time.time() - t0))
    if failed:
        print("failing: %s" % ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
