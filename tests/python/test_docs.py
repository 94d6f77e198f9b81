# docs/python.md's Python blocks, run in order in one namespace in a
# temporary folder: the page's examples work as written.
import os
import re

import pytest

DOC = os.path.join(os.environ.get("TW_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                   "docs", "python.md")


def test_python_blocks_run(tmp_path, monkeypatch, capsys):
    pytest.importorskip("scipy")
    with open(DOC) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for k, code in enumerate(blocks):
        exec(compile(code, "%s, python block %d" % (DOC, k + 1), "exec"), namespace)
    assert os.path.exists("slide.tif") and os.path.exists("dist.tif") and os.path.exists("mask.tif")
