"""docs/performance.md is written by several scripts, each owning sections
that start with "## <title>": this replaces one script's sections and keeps
the others'."""
import os
import platform
import re


def sections(text):
    """[(title, text)] in order; the part before the first "## " has title ""."""
    parts = re.split(r"(?m)^(?=## )", text)
    out = []
    for p in parts:
        m = re.match(r"## (.*)", p)
        out.append((m.group(1).strip() if m else "", p))
    return out


def replace_sections(path, owned_titles, new_text, head=None):
    """Writes path with the sections titled in owned_titles (prefixes)
    replaced by new_text, where the first of them stood (else at the end);
    head, when given, replaces the part before the first section."""
    old = open(path).read() if os.path.exists(path) else ""
    parts, placed = [], False
    for title, text in sections(old):
        if title == "":
            parts.append(head if head is not None else text)
        elif any(title.startswith(t) for t in owned_titles):
            if not placed:
                parts.append(new_text)
                placed = True
        else:
            parts.append(text)
    if not old and head is not None:
        parts.append(head)
    if not placed:
        parts.append(new_text)
    with open(path, "w") as f:
        f.write("".join(t.rstrip("\n") + "\n\n" for t in parts if t.strip()).rstrip("\n") + "\n")


def cpu_name():
    """The processor's model name, for the sections' machine lines."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def machine_lines(cores=None):
    """A section's "- Machine: ..." and "- Date: ..." lines: this processor,
    `cores` logical cores (all of them by default), the platform, now."""
    import datetime
    return ["- Machine: %s, %d logical cores, %s" % (cpu_name(), cores or os.cpu_count(), platform.platform()),
            "- Date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M")]
