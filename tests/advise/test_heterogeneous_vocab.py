"""A draft model whose vocabulary differs from the target's by padding rows only (Qwen2.5-7B's 152,064 rows against
its 0.5B draft's 151,936, beyond the 151,665 tokens both tokenizers define) is served by vLLM 0.26 to 0.33 with
``"use_heterogeneous_vocab": true`` (vLLM PR #38174: method draft_model, greedy draft sampling). advise evaluates it
there and writes the key; on any other vLLM (0.34 removed the key; review s46b), or with probabilistic drafting, it
stays unservable (review s45c: advise called the pair unservable on the vLLM its own message said serves it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.catalog import resolve_model
from specwise.cli import main
from specwise.compat.pair import check_pair, padding_vocab, served_with_heterogeneous_vocab
from specwise.engines.base import Speculation
from specwise.engines.vllm import VllmEngine
from specwise.engines.vllm_versions import VllmVersion
from specwise.errors import SpecwiseError
from specwise.methods import get_method

SCENARIO = """name = "qwen25-7b-05b"
[deployment]
target = "Qwen/Qwen2.5-7B-Instruct"
gpu = "H100-SXM-80GB"
max_model_len = 8192
[advise]
operating_qps = 1
[sweep]
qps = [1, 4]
num_requests = 150
[[workload]]
name = "chat"
prompt_tokens = 500
output_tokens = 200
[[candidate]]
method = "draft_model"
draft = "Qwen/Qwen2.5-0.5B-Instruct"
k = [0, 2, 4]
"""


def test_a_padding_only_difference_is_a_warning_where_the_key_serves_it() -> None:
    target, draft = resolve_model("Qwen/Qwen2.5-7B-Instruct"), resolve_model("Qwen/Qwen2.5-0.5B-Instruct")
    findings = check_pair(target, draft).findings
    (vocab,) = [f for f in findings if f.check == "vocab"]
    assert vocab.status == "fail" and padding_vocab(findings)  # check-pair itself stays version-agnostic
    (served,) = [f for f in served_with_heterogeneous_vocab(findings) if f.check == "vocab"]
    assert served.status == "warn" and served.evidence["use_heterogeneous_vocab"] is True
    other = check_pair(target, resolve_model("meta-llama/Llama-3.2-1B-Instruct")).findings
    assert not padding_vocab(other)  # another tokenizer altogether: not served without loss, not changed
    assert served_with_heterogeneous_vocab(other) == tuple(other)


def test_the_key_is_written_only_where_vllm_takes_it() -> None:
    s = Speculation(get_method("draft_model"), 2, "Qwen/Qwen2.5-0.5B-Instruct", heterogeneous_vocab=True)
    for served in ("0.26", "0.30.1", "0.33"):  # the wheels whose SpeculativeConfig has the field
        assert VllmEngine(VllmVersion.parse(served)).speculative_config(s)["use_heterogeneous_vocab"] is True
    said = r"vLLM 0\.24\.0 refuses a draft whose vocabulary size differs \(use_heterogeneous_vocab is in vLLM 0\.26 to"
    with pytest.raises(SpecwiseError, match=said):
        VllmEngine(VllmVersion.parse("0.24")).speculative_config(s)
    for gone, named in (("0.34", "vLLM 0.34.0"), ("0.35.1", "vLLM 0.35.1"), (None, "the current vLLM")):
        engine = VllmEngine(None if gone is None else VllmVersion.parse(gone))
        with pytest.raises(SpecwiseError, match=rf"{named} refuses .* 0\.34 removed use_heterogeneous_vocab"):
            engine.speculative_config(s)


def test_advise_evaluates_the_pair_and_writes_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "qwen25.toml"
    path.write_text(SCENARIO)
    served = ["--vllm-version", "0.32"]
    assert main(["advise", "--scenario", str(path), "--json", "--processes", "1", *served]) == 0
    (cand,) = json.loads(capsys.readouterr().out)["candidates"]
    assert cand["verdict"] in ("enable", "measure_first", "enable_below")
    assert cand["speculative_config"]["use_heterogeneous_vocab"] is True
    (compat,) = [r for r in cand["rules"] if r["rule"] == "draft/target compatibility"]
    assert compat["status"] == "warn" and "use_heterogeneous_vocab" in compat["message"]
    for other in (["--vllm-version", "0.24"], ["--vllm-version", "0.34"], []):  # [] : the current vLLM
        assert main(["advise", "--scenario", str(path), "--json", "--processes", "1", *other]) == 1
        (cand,) = json.loads(capsys.readouterr().out)["candidates"]
        assert cand["verdict"] == "unsupported" and "vocabulary sizes differ" in cand["reason"]
        assert "use_heterogeneous_vocab" not in (cand.get("speculative_config") or {})
    hot = tmp_path / "hot.toml"
    hot.write_text(SCENARIO + 'drafting = "probabilistic"\n')
    assert main(["advise", "--scenario", str(hot), "--json", "--processes", "1", *served]) == 1
    (cand,) = json.loads(capsys.readouterr().out)["candidates"]
    assert cand["verdict"] == "unsupported"
