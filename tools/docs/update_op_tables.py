#!/usr/bin/env python3
"""Writes every registered op's options table into docs/ops/ (between
<!-- options: NAME --> and <!-- /options --> markers), from the registry:

    tools/docs/update_op_tables.py [build/tools/tilewave]

A table already in some page is replaced where it stands; a new op's table
goes under an "## Options" heading at the end of the page for its command
(filter ops and stats: filters.md; the math family: math.md; reconstruct,
fill-holes, hdome: reconstruct.md; edt: edt.md; any other:
docs/ops/NAME.md). The test OpDocs.OptionsTablesAreTheRegistrys fails until this has been run."""
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, "..", ".."))
tw = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "tools", "tilewave")
text = subprocess.run([tw, "ops", "--markdown"], check=True, capture_output=True, text=True).stdout
tables = dict(re.findall(r"<!-- options: (\S+) -->\n(.*?)<!-- /options -->", text, re.S))
docs = os.path.join(root, "docs", "ops")
pages = {f: open(os.path.join(docs, f)).read() for f in os.listdir(docs) if f.endswith(".md")}


def home(name):
    if name in ("reconstruct", "fill-holes", "hdome"):
        return "reconstruct.md"
    if name == "edt":
        return "edt.md"
    cmds = subprocess.run([tw, "ops"], check=True, capture_output=True, text=True).stdout
    for line in cmds.splitlines():
        words = line.split()
        if words[:2] == ["filter", name] or words[:1] == ["stats"] and name == "stats":
            return "filters.md"
        if words[:2] == ["math", name]:
            return "math.md"
    return name + ".md"


for name, table in tables.items():
    block = "<!-- options: %s -->\n%s<!-- /options -->" % (name, table)
    pattern = re.compile(r"<!-- options: %s -->\n.*?<!-- /options -->" % re.escape(name), re.S)
    placed = False
    for f, t in pages.items():
        if pattern.search(t):
            pages[f] = pattern.sub(lambda m: block, t)
            placed = True
    if not placed:
        f = home(name)
        t = pages.get(f, "# `tilewave %s`\n" % name)
        if "\n## Options\n" not in t:
            t = t.rstrip("\n") + "\n\n## Options\n\nFrom the op registry (`tilewave ops --markdown`; a test keeps them equal).\n"
        pages[f] = t.rstrip("\n") + "\n\n### `%s`\n\n%s\n" % (name, block)
for f, t in pages.items():
    path = os.path.join(docs, f)
    if not os.path.exists(path) or open(path).read() != t:
        open(path, "w").write(t)
        print("updated", path)
