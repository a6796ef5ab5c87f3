"""``bench --launch FILE --calibrate`` refuses, before any server starts or request is sent, a launch file whose
engine's /metrics give no calibration (SGLang's gauges, llama.cpp's totals): the fit used to fail only after every
level had run, leaving a --json redirect empty. ``--calibrate-run`` of such a stored run says why, too."""

from __future__ import annotations

from pathlib import Path

import pytest

from specwise.cli import main
from specwise.loadgen.store import ResultStore


@pytest.mark.parametrize(("engine", "exported"), [("sglang", "gauges only"), ("llama.cpp", "token totals only")])
def test_calibrate_refuses_an_engine_without_counters_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str, exported: str
) -> None:
    launch = tmp_path / "measure.toml"
    launch.write_text(
        f'engine = "{engine}"\nmodel = "m"\npython = "/nonexistent/python"\n[[config]]\nname = "baseline"\n'
    )
    db = tmp_path / "b.sqlite"
    assert main(["bench", "--launch", str(launch), "--calibrate", "--db", str(db), "--json"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and captured.out == ""
    assert f"--calibrate: launch file {launch} (engine = '{engine}'): {engine} exports its speculation as " in err
    assert exported in err and "run it without --calibrate" in err
    assert not db.exists()  # nothing started, nothing stored


def test_calibrate_run_of_a_stored_sglang_run_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = ResultStore(tmp_path / "b.sqlite")
    launch = {"name": "baseline", "speculative_config": None, "server_args": [], "engine": "sglang"}
    store.create_run("base-baseline", 0.0, {"rates": [1.0], "launch": launch})
    store.close()
    assert main(["bench", "--calibrate-run", "base", "--db", str(tmp_path / "b.sqlite")]) == 2
    err = capsys.readouterr().err.strip()
    assert "run base-baseline ran sglang: sglang exports its speculation as gauges only" in err
    assert len(err.splitlines()) == 1


def test_a_vllm_launch_file_may_be_calibrated(tmp_path: Path) -> None:
    from specwise.calibration.from_bench import check_calibratable
    from specwise.engines import ENGINES
    from specwise.engines.base import calibration_refusal

    launch = tmp_path / "measure.toml"
    launch.write_text('model = "m"\n[[config]]\nname = "baseline"\n')
    check_calibratable(launch)  # vLLM (the default engine): no refusal
    assert [name for name, e in ENGINES.items() if calibration_refusal(e) is None] == ["vllm"]
