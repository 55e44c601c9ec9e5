#!/usr/bin/python3
"""The include graph of src/ follows the layers of docs/architecture.md.

Each folder of src/ has a layer; a file may include headers of its own
folder and of folders in lower layers, never of a folder in its own layer or
above. Backends are plug-ins: src/backends/<name>/ includes no other
backend's folder, and outside src/backends only the registry
(backends/registry.hpp) is included. tools/ sits above everything.

    /usr/bin/python3 tests/layering/check_layers.py [ROOT]

Prints each include that runs up a layer (file:line: what and why) and
exits 1 when there is one, 0 otherwise.
"""

import os
import re
import sys

LAYERS = {
    "support": 0,
    "syntax": 1, "target": 1,
    "cir": 2, "driver": 2,
    "sema": 3, "runtime": 3, "plan": 3,
    "lower": 4, "codegen": 4, "fusion": 4,
    "backends": 5, "host": 5, "dist": 5,
    "interp": 6,
    "api": 7,
}
TOOLS = 8
# Headers CMake writes into the build tree, and the public API (include/zyntax/).
GENERATED = {"codegen_fingerprint.hpp", "enabled_backends.inc"}
PUBLIC_API = "zyntax"

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(rel):
    """('backends', 'cuda') for src/backends/cuda/x.cpp; ('tools', None) for tools/..."""
    parts = rel.split("/")
    if parts[0] == "tools":
        return "tools", None
    top = parts[1]
    sub = parts[2] if top == "backends" and len(parts) > 3 else None
    return top, sub


def check(root):
    problems = []
    for base in ("src", "tools"):
        for dirpath, _, files in os.walk(os.path.join(root, base)):
            for name in sorted(files):
                if not name.endswith((".cpp", ".hpp")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                top, sub = folder_of(rel)
                rank = TOOLS if top == "tools" else LAYERS.get(top)
                if rank is None:
                    problems.append("%s: src/%s/ has no layer (add it to LAYERS and to docs/architecture.md)" % (rel, top))
                    continue
                text = open(path, encoding="utf-8").read()
                for m in INCLUDE.finditer(text):
                    inc = m.group(1)
                    line = text.count("\n", 0, m.start()) + 1
                    where = "%s:%d: includes %s" % (rel, line, inc)
                    if inc in GENERATED:
                        continue
                    target = inc.split("/")[0]
                    if target == PUBLIC_API:
                        if top not in ("api", "tools"):
                            problems.append(where + ": only src/api and tools use the public API")
                        continue
                    if "/" not in inc:
                        problems.append(where + ": name the header by its folder (" + top + "/...)")
                        continue
                    if target == top == "tools":
                        continue  # the command line's own files
                    if target not in LAYERS:
                        problems.append(where + ": src/" + target + "/ has no layer")
                        continue
                    inc_parts = inc.split("/")
                    if target == "backends" and len(inc_parts) > 2:
                        backend = inc_parts[1]
                        if top == "backends" and sub not in (None, backend):
                            problems.append(where + ": a backend includes another backend's folder (backends are plug-ins)")
                            continue
                        if top not in ("backends", "tools"):
                            problems.append(where + ": outside src/backends only backends/registry.hpp is included")
                            continue
                    if target == top:
                        continue
                    if LAYERS[target] >= rank:
                        problems.append("%s: %s (layer %d) may not include %s (layer %d)" % (where, top, rank, target, LAYERS[target]))
    return problems


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    problems = check(root)
    for p in problems:
        print(p)
    print("%d include(s) against the layers" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
