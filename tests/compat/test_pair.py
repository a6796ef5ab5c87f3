from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.catalog import catalog_model_spec, resolve_draft, resolve_model
from specwise.compat.pair import check_pair
from specwise.compat.tokenizer_files import gather_tokenizer_evidence
from tests.conftest import LLAMA_TINY, write_gguf, write_model_dir


def _status(report: object, check: str) -> str:
    return next(f.status for f in report.findings if f.check == check)  # type: ignore[attr-defined]


def test_qwen25_padding_difference_fails_as_vllm_refuses_it_and_says_how_to_pad() -> None:
    # vLLM V1 raises on any vocab_size difference (SpeculativeConfig.verify_equal_vocab_size_if_draft_model), V0
    # asserted it (issue #5203); PR #13849's padding tolerance was closed unmerged
    report = check_pair(
        catalog_model_spec("Qwen/Qwen2.5-7B-Instruct"), catalog_model_spec("Qwen/Qwen2.5-0.5B-Instruct")
    )
    assert not report.compatible
    vocab = next(f for f in report.findings if f.check == "vocab")
    assert vocab.status == "fail" and "differ by 128 rows" in vocab.message and "all of it padding" in vocab.message
    assert (
        "vLLM refuses any difference by default" in vocab.message
        and "pad the draft's embedding and lm_head to 152064" in vocab.message
    )
    # vLLM 0.32's SpeculativeConfig.use_heterogeneous_vocab (PR #38174) runs the pair without new weights
    assert '"use_heterogeneous_vocab": true' in vocab.message and "limits no proposal" in vocab.message
    assert vocab.evidence["vllm_option"] == "use_heterogeneous_vocab"


def test_other_vocabulary_fails() -> None:
    report = check_pair(
        catalog_model_spec("Qwen/Qwen2.5-7B-Instruct"), catalog_model_spec("meta-llama/Llama-3.2-1B-Instruct")
    )
    assert not report.compatible
    assert _status(report, "vocab") == "fail" and _status(report, "tokenizer") == "fail"
    assert "152064" in report.failures[0].message and "128256" in report.failures[0].message
    assert "use_heterogeneous_vocab" in report.failures[0].message and "lowers acceptance" in report.failures[0].message


def test_qwen3_target_with_qwen25_draft_warns_about_extra_tokens() -> None:
    report = check_pair(catalog_model_spec("Qwen/Qwen3-8B"), catalog_model_spec("Qwen/Qwen2.5-0.5B-Instruct"))
    assert report.compatible and _status(report, "tokenizer") == "warn"


@pytest.mark.parametrize(
    ("target", "draft", "status"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "warn"),  # 1:6.5
        ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", "pass"),  # 1:15.4, smaller than advice
        ("Qwen/Qwen2.5-14B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "pass"),  # 1:9.6, within
        ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "fail"),  # draft larger than target
    ],
)
def test_size_ratio_against_advice(target: str, draft: str, status: str) -> None:
    report = check_pair(catalog_model_spec(target), catalog_model_spec(draft))
    assert _status(report, "size_ratio") == status


def test_moe_target_ratio_uses_active_params() -> None:
    report = check_pair(catalog_model_spec("Qwen/Qwen3-30B-A3B"), catalog_model_spec("Qwen/Qwen3-0.6B"))
    finding = next(f for f in report.findings if f.check == "size_ratio")
    assert "active parameters" in finding.message
    assert finding.status == "warn"  # 3.3B active vs 0.6B: 1:5.6


def test_eagle_head_checks() -> None:
    target8 = catalog_model_spec("meta-llama/Llama-3.1-8B-Instruct")
    head, trained_for = resolve_draft("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", target8)
    assert head.spec is not None
    ok = check_pair(target8, head.spec, head_trained_for=trained_for)
    assert ok.compatible and _status(ok, "head") == "pass" and _status(ok, "size_ratio") == "info"
    target70 = catalog_model_spec("meta-llama/Llama-3.1-70B-Instruct")
    bad = check_pair(target70, head.spec, head_trained_for=trained_for)
    assert not bad.compatible and "4096" in bad.failures[0].message


def _tokenizer_json(path: Path, vocab: dict[str, int], pre: str = "whitespace") -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace() if pre == "whitespace" else pre_tokenizers.WhitespaceSplit()
    tok.save(str(path))


def _vocab() -> dict[str, int]:
    words = [
        "[UNK]",
        "the",
        "quick",
        "brown",
        "fox",
        "def",
        "return",
        "n",
        "(",
        ")",
        ":",
        ".",
        ",",
        "int",
        "-",
        "+",
        "<",
        ">",
        "1",
        "2",
        "3",
        "fibonacci",
        "if",
        "else",
    ]
    return {w: i for i, w in enumerate(words)}


def _model_with_tokenizer(root: Path, name: str, vocab: dict[str, int], pre: str = "whitespace") -> Path:
    d = write_model_dir(root, name, {**LLAMA_TINY, "vocab_size": len(vocab)})
    _tokenizer_json(d / "tokenizer.json", vocab, pre)
    return d


def test_tokenizer_files_identical(tmp_path: Path) -> None:
    t = resolve_model(str(_model_with_tokenizer(tmp_path, "t", _vocab())))
    d = resolve_model(str(_model_with_tokenizer(tmp_path, "d", _vocab())))
    ev = gather_tokenizer_evidence(t.tokenizer, d.tokenizer)
    assert ev is not None and ev.mismatched_ids == 0 and ev.samples_compared == ev.samples_agreeing > 0
    report = check_pair(t, d, tokenizer_evidence=ev)
    assert _status(report, "tokenizer") == "pass"


def test_tokenizer_files_with_swapped_ids_fail(tmp_path: Path) -> None:
    vocab = _vocab()
    swapped = dict(vocab)
    swapped["quick"], swapped["brown"] = vocab["brown"], vocab["quick"]
    t = resolve_model(str(_model_with_tokenizer(tmp_path, "t", vocab)))
    d = resolve_model(str(_model_with_tokenizer(tmp_path, "d", swapped)))
    report = check_pair(t, d, tokenizer_evidence=gather_tokenizer_evidence(t.tokenizer, d.tokenizer))
    finding = next(f for f in report.findings if f.check == "tokenizer")
    assert finding.status == "fail" and "disagree on 2 of" in finding.message and "'quick'" in finding.message


def test_same_table_different_pre_tokenizer_fails_on_samples(tmp_path: Path) -> None:
    t = resolve_model(str(_model_with_tokenizer(tmp_path, "t", _vocab(), "whitespace")))
    d = resolve_model(str(_model_with_tokenizer(tmp_path, "d", _vocab(), "split")))
    report = check_pair(t, d, tokenizer_evidence=gather_tokenizer_evidence(t.tokenizer, d.tokenizer))
    finding = next(f for f in report.findings if f.check == "tokenizer")
    assert finding.status == "fail" and "sample strings encode differently" in finding.message


def test_gguf_token_tables(tmp_path: Path) -> None:
    a = resolve_model(str(write_gguf(tmp_path / "a.gguf")))
    b = resolve_model(str(write_gguf(tmp_path / "b.gguf")))
    other = resolve_model(str(write_gguf(tmp_path / "c.gguf", tokens=[f"x{i}" for i in range(100)])))
    assert check_pair(a, b, tokenizer_evidence=gather_tokenizer_evidence(a.tokenizer, b.tokenizer)).compatible
    bad = check_pair(a, other, tokenizer_evidence=gather_tokenizer_evidence(a.tokenizer, other.tokenizer))
    assert not bad.compatible


def test_real_smollm2_paired_with_itself(smollm2_gguf: Path) -> None:
    spec = resolve_model(str(smollm2_gguf))
    ev = gather_tokenizer_evidence(spec.tokenizer, spec.tokenizer)
    assert ev is not None and ev.common_ids == 49152 and ev.mismatched_ids == 0 and ev.merges_equal
    report = check_pair(spec, spec, tokenizer_evidence=ev)
    assert report.compatible and report.param_ratio == 1.0
    assert _status(report, "size_ratio") == "warn"


def test_malformed_tokenizer_json_is_a_clear_error(tmp_path: Path) -> None:
    from specwise.errors import SpecwiseError

    d = write_model_dir(tmp_path, "t", LLAMA_TINY)
    (d / "tokenizer.json").write_text(json.dumps({"model": {}}))
    spec = resolve_model(str(d))
    with pytest.raises(SpecwiseError, match=r"no model\.vocab"):
        gather_tokenizer_evidence(spec.tokenizer, spec.tokenizer)


@pytest.mark.parametrize(
    ("head_id", "max_model_len", "warned"),
    [
        ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", None, True),  # 2,048 positions vs the target's 131,072
        ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", 8192, True),
        ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", 2048, False),
        ("yuhuili/EAGLE-LLaMA3.1-Instruct-8B", 8192, False),  # an EAGLE-1 head with 8,192 positions
    ],
)
def test_eagle_head_context_window(head_id: str, max_model_len: int | None, warned: bool) -> None:
    """Heads were skipped by the context check although both EAGLE-3 heads record 2,048 positions (SGLang issue
    #6783 is that failure; vLLM #48894 raises the head's positions, which it never trained on)."""
    target = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    head, trained_for = resolve_draft(head_id, target)
    assert head.spec is not None
    report = check_pair(target, head.spec, head_trained_for=trained_for, max_model_len=max_model_len)
    found = [f for f in report.findings if f.check == "max_length"]
    assert bool(found) == warned and report.compatible
    if warned:
        (f,) = found
        assert f.status == "warn" and "trained with 2,048 positions" in f.message and "#6783" in f.message
        assert f.evidence["context"] == (max_model_len or 131072) and f.evidence["draft"] == 2048


def test_check_pair_cli_max_model_len(capsys: pytest.CaptureFixture[str]) -> None:
    from specwise.cli import main

    argv = [
        "check-pair",
        "--target",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--draft",
        "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    ]
    assert main([*argv, "--json", "--max-model-len", "2048"]) == 0
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if f["check"] == "max_length"]
    assert main([*argv, "--json", "--max-model-len", "100000"]) == 0  # past the head's 2,048 trained positions
    (f,) = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["check"] == "max_length"]
    assert f["status"] == "warn" and "--max-model-len 100,000" in f["message"]
    assert main([*argv, "--max-model-len", "0"]) == 2
    assert main([*argv, "--max-model-len", "200000"]) == 2  # past the target's own 131,072: vLLM refuses it


def test_a_draft_larger_than_its_target_reads_as_such() -> None:
    from specwise.compat.pair import ratio_text

    assert ratio_text(12.34) == "1:12.3" and ratio_text(1 / 57.1) == "57.1:1"  # before: "1:0.0"


def test_an_eagle_head_of_another_vocabulary_is_offered_no_vllm_option() -> None:
    """use_heterogeneous_vocab is vLLM's for method draft_model only (0.32 refuses it otherwise): a head whose
    vocabulary differs gets no such advice."""
    target = catalog_model_spec("Qwen/Qwen3-8B")
    choice, _ = resolve_draft("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", target)
    assert choice.spec is not None and choice.spec.draft_head == "eagle3"
    report = check_pair(target, choice.spec)
    vocab = next(f for f in report.findings if f.check == "vocab")
    assert vocab.status == "fail" and "use_heterogeneous_vocab" not in vocab.message
    assert "vllm_option" not in vocab.evidence
