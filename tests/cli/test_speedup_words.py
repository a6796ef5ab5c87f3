"""``specwise speedup`` says when its number is a slowdown (review D, finding 8): before, 0.714x read like any other
result; and a tiny speedup is shown in significant digits, not as 0.000x."""

from __future__ import annotations

import pytest

from specwise.cli import main

SLOWER = "a slowdown, slower than plain decoding"


def _run(capsys: pytest.CaptureFixture[str], alpha: str, k: str, c: str) -> tuple[int, str]:
    code = main(["speedup", "--alpha", alpha, "--k", k, "--cost-ratio", c])
    return code, " ".join(capsys.readouterr().out.split())


def test_a_slowdown_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "0", "4", "0.1")
    assert code == 0 and "speedup 0.714x" in out and SLOWER in out


def test_a_gain_is_not_called_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "0.8", "4", "0.05")
    assert code == 0 and "speedup 2.801x" in out and SLOWER not in out and "no gain" not in out
    assert "no gain" in _run(capsys, "0.5", "0", "0.1")[1]  # k = 0: plain decoding itself


def test_a_tiny_speedup_keeps_its_digits(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = _run(capsys, "0", "4", "1e300")
    assert "speedup 2.5e-301x" in out and SLOWER in out


def test_the_help_gives_ks_range(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["speedup", "--help"])
    assert "draft tokens per step, 0 to 16" in " ".join(capsys.readouterr().out.split())


def test_a_k_above_the_model_is_a_flag_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Review s59: --k 17 said "--k 17: specwise models up to 16 ..." without argparse's "argument --k:" and the
    help pointer every other flag error has."""
    from specwise.cli import main

    assert main(["speedup", "--alpha", "0.7", "--k", "17", "--cost-ratio", "0.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("specwise speedup: error: argument --k: expected an integer in 0..16")
    assert err.endswith("(see 'specwise speedup --help')") and "\n" not in err
