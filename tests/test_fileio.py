"""Writing outputs: through symlinks (the link stays), straight into devices and pipes (never replaced by a
renamed temp file), and never over the command's own input."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.examples import example_path
from specwise.fileio import (
    check_output_file,
    read_text_bounded,
    stream_fd,
    write_files_atomic,
    write_json_atomic,
    write_text_atomic,
)

EXAMPLE = "example:advise/summarize-low-qps"


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to("real.json")  # dangling until written
    write_json_atomic(link, {"a": 1})
    assert link.is_symlink() and (tmp_path / "real.json").read_text() == '{\n  "a": 1\n}\n'
    write_files_atomic({link: b"x"})
    assert link.is_symlink() and (tmp_path / "real.json").read_bytes() == b"x"


def test_a_fifo_is_written_to_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    check_output_file(fifo)
    write_text_atomic(fifo, "hello")
    reader.join(timeout=10)
    assert got == ["hello"] and stat.S_ISFIFO(fifo.stat().st_mode)  # still a pipe
    with pytest.raises(SpecwiseError, match="not a regular file"):
        write_files_atomic({fifo: b"x"})  # a set of files is all-or-nothing: a pipe cannot take part
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_device_is_one_line_and_stays_a_device() -> None:
    with pytest.raises(SpecwiseError, match=r"^/dev/full: cannot write \(No space left on device\)"):
        write_text_atomic(Path("/dev/full"), "x" * 100_000)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_an_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text("x")
    (tmp_path / "alias.toml").symlink_to(scenario)
    for out in (scenario, tmp_path / "alias.toml", tmp_path / "sub" / ".." / "s.toml"):
        with pytest.raises(SpecwiseError, match=r"is the --scenario file this command reads"):
            check_output_file(out, [("--scenario", scenario)])
    check_output_file(tmp_path / "other.html", [("--scenario", scenario), ("--bench", None)])


def test_advise_report_over_its_scenario_is_exit_2_and_leaves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    before = example_path(EXAMPLE).read_text()
    scenario.write_text(before)
    capsys.readouterr()
    rc = main(["advise", "--scenario", str(scenario), "--report", str(scenario), "--processes", "1"])
    assert rc == 2 and scenario.read_text() == before
    assert "is the --scenario file this command reads" in capsys.readouterr().err


def test_calibrate_out_over_its_result_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = tmp_path / "run.json"
    result.write_text("{}")
    assert main(["calibrate", str(result), "--out", str(result)]) == 2
    assert result.read_text() == "{}" and "is the result file this command reads" in capsys.readouterr().err


def _export_to(out: str, shell_tail: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``specwise export grafana --out OUT`` under a shell, its streams redirected by ``shell_tail``."""
    cmd = f"{shlex.quote(sys.executable)} -m specwise.cli export grafana --out {out} {shell_tail}"
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_dev_stdout_redirected_to_a_file_is_appended_to_not_replaced(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("PRECIOUS EXISTING LINE\n")
    proc = _export_to("/dev/stdout", f">> {log}", tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = log.read_text()
    assert text.startswith("PRECIOUS EXISTING LINE\n") and '"panels"' in text  # appended after it


def test_dev_stdout_into_a_pipe_and_dev_stderr(tmp_path: Path) -> None:
    proc = _export_to("/dev/stdout", "| wc -c", tmp_path)
    assert proc.returncode == 0 and int(proc.stdout) > 1000, proc.stderr
    proc = _export_to("/dev/stderr", "2>&1 >/dev/null | wc -c", tmp_path)
    assert proc.returncode == 0 and int(proc.stdout) > 1000, proc.stderr


def test_stream_paths_name_their_descriptor() -> None:
    assert [stream_fd(Path(p)) for p in ("/dev/stdout", "/dev/stderr", "/dev/fd/3", "/proc/self/fd/1")] == [1, 2, 3, 1]
    assert stream_fd(Path(f"/proc/{os.getpid()}/fd/4")) == 4
    assert stream_fd(Path("/dev/null")) is None and stream_fd(Path("out/x.json")) is None
    with pytest.raises(SpecwiseError, match="not a regular file"):
        write_files_atomic({Path("/dev/stdout"): b"x"})


def test_an_output_inside_an_input_directory_is_refused(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (tmp_path / "link").symlink_to(model)
    for out in (model / "config.json", model / "sub" / "new.json", tmp_path / "link" / "x.json"):
        with pytest.raises(SpecwiseError, match=rf"^--json {out}: is in the --target directory {model}, which"):
            check_output_file(out, [("--target", model)], "--json")
    check_output_file(tmp_path / "model.json", [("--target", model), ("--draft", tmp_path / "missing")])


BOM = b"\xef\xbb\xbf"


def _with_bom(tmp_path: Path, name: str, text: str) -> tuple[Path, Path]:
    """The same text in two files, the second with a UTF-8 byte-order mark first (as Windows editors save it)."""
    plain, bom = tmp_path / name, tmp_path / f"bom-{name}"
    plain.write_text(text)
    bom.write_bytes(BOM + text.encode())
    return plain, bom


def test_a_leading_bom_is_dropped_by_every_text_reader(tmp_path: Path) -> None:
    """A JSON prompt file with a BOM was refused ("Unexpected UTF-8 BOM") while a TOML scenario with one was read:
    read_text_bounded (prompts, traces, templates, TOML) and the JSON document readers now drop it alike."""
    from specwise.contracts.bench_formats import read_objects
    from specwise.contracts.document import read_json_file
    from specwise.prompts.sources import load_prompts

    plain, bom = _with_bom(tmp_path, "t.txt", "0\n1\n")
    assert read_text_bounded(bom, 100, "trace") == read_text_bounded(plain, 100, "trace") == "0\n1\n"
    twice = tmp_path / "twice.txt"
    twice.write_bytes(BOM + BOM + b"x")  # only the leading mark is a BOM; a second one is content
    assert read_text_bounded(twice, 100, "trace") == "\ufeffx"
    for name, text in (("p.json", '[{"prompt": "a"}]'), ("p.jsonl", '{"prompt": "a"}\n{"prompt": "b"}\n')):
        plain, bom = _with_bom(tmp_path, name, text)
        assert load_prompts(str(bom)) == load_prompts(str(plain))
    plain, bom = _with_bom(tmp_path, "doc.json", '{"a": 1}')
    assert read_json_file(bom, "test") == read_json_file(plain, "test") == {"a": 1}
    plain, bom = _with_bom(tmp_path, "bench.json", '{"a": 1}\n{"b": 2}\n')
    assert read_objects(bom) == read_objects(plain) == [{"a": 1}, {"b": 2}]
