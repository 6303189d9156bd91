"""Every example in the user guide (docs/guide/*.md) runs, and prints what the guide shows.

A page's ```python blocks run in order in one namespace, in a fresh temporary working
directory (so relative table paths such as `tables/events` start empty), with `spark` the test
session (the pages say so at the top: the quick start shows how a program gets one). A ```text
block right after a ```python block is what that block prints: the test compares them line by
line (trailing spaces ignored). ```bash blocks that run the `pydelta` command line run too, with
their ```text output checked the same way; `pip`/`make` blocks are install steps, exercised by
tests/test_wheel.py and .ci/run instead. A page marked `<!-- guide: own-process -->` runs in a
Python process of its own (Spark Connect switches PySpark's functions for the whole process).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "guide"
OWN_PROCESS = "<!-- guide: own-process -->"
# A page marked so runs against the test session's Unity Catalog server (UC_URI in its environment).
UNITY_CATALOG = "<!-- guide: unity-catalog -->"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)

pytestmark = pytest.mark.spark


@dataclass
class Example:
    kind: str  # python | bash
    code: str
    output: str | None  # the ```text block that follows, if any
    line: int


def examples(page: Path) -> list[Example]:
    text = page.read_text()
    blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in _FENCE.finditer(text)]
    out: list[Example] = []
    for i, (kind, code, start, end) in enumerate(blocks):
        if kind not in ("python", "bash"):
            continue
        output = None
        if i + 1 < len(blocks) and blocks[i + 1][0] == "text" and not text[end:blocks[i + 1][2]].strip():
            output = blocks[i + 1][1]
        out.append(Example(kind, code, output, text.count("\n", 0, start) + 1))
    return out


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def _check(page: Path, example: Example, printed: str) -> None:
    if example.output is not None:
        assert _lines(printed) == _lines(example.output), f"{page.name}:{example.line} printed\n{printed}"


def _run_bash(page: Path, example: Example) -> None:
    for command in example.code.strip().splitlines():
        if command.split()[0] in ("pip", "make", "python", "git"):
            return  # an install step (see the module docstring)
        words = command.split()
        assert words[0] == "pydelta", f"{page.name}:{example.line}: only the pydelta CLI runs from bash blocks"
        cli = Path(sys.executable).parent / "pydelta"
        result = subprocess.run([str(cli), *words[1:]], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        _check(page, example, result.stdout)


PAGES = sorted(GUIDE.glob("*.md"))


def test_the_guide_is_in_the_site_navigation():
    nav = (REPO / "mkdocs.yml").read_text()
    for page in PAGES:
        assert f"guide/{page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_examples_run(page, spark, tmp_path, monkeypatch, request):
    found = examples(page)
    if UNITY_CATALOG in page.read_text():
        monkeypatch.setenv("UC_URI", request.getfixturevalue("uc_server").uri)
    assert found or "```" not in page.read_text(), page.name
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")  # `pydelta`
    if OWN_PROCESS in page.read_text():
        _run_in_own_process(page, found, tmp_path)
        return
    namespace: dict = {"spark": spark, "__name__": f"guide_{page.stem}"}
    for example in found:
        if example.kind == "bash":
            _run_bash(page, example)
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(example.code, f"{page.name}:{example.line}", "exec"), namespace)
        _check(page, example, printed.getvalue())


_CHILD = r"""
import contextlib, io, json, sys
blocks = json.loads(sys.stdin.read())
namespace = {"__name__": "guide"}
outputs = []
for code, name in blocks:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, name, "exec"), namespace)
    outputs.append(printed.getvalue())
print(json.dumps(outputs))
"""


def _run_in_own_process(page: Path, found: list[Example], cwd: Path) -> None:
    python = [e for e in found if e.kind == "python"]
    for e in found:
        if e.kind == "bash":
            _run_bash(page, e)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(
        [(e.code, f"{page.name}:{e.line}") for e in python]), capture_output=True, text=True, timeout=900,
        cwd=cwd, env=env)
    assert result.returncode == 0, result.stderr[-4000:]
    for example, printed in zip(python, json.loads(result.stdout.strip().splitlines()[-1]), strict=True):
        _check(page, example, printed)
