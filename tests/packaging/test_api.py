"""The Python API (issue 14): its doctests, the README's Python API example, and ``import specwise`` staying
light (the API and its dependencies load on first use)."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys

import specwise
import specwise.api
from tests.readme_examples import README


def test_the_api_doctests_pass() -> None:
    result = doctest.testmod(specwise.api, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted >= 15


def test_the_readme_python_api_example_runs_as_written() -> None:
    blocks = re.findall(r"```pycon\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has no ```pycon example"
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for i, text in enumerate(blocks):
        runner.run(parser.get_doctest(text, {}, f"README pycon block {i + 1}", str(README), 0))
    assert runner.summarize(verbose=False).failed == 0


def test_the_api_is_exported_and_import_specwise_stays_light() -> None:
    assert set(specwise.__all__) >= {"advise", "simulate", "plan_memory", "profile", "bench"}
    assert all(callable(getattr(specwise, name)) for name in specwise.api.__all__)
    code = "import sys, specwise; print(sorted(m for m in ('specwise.api', 'numpy', 'rich') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
