"""``profile --chat-template``: the target's own template (from its tokenizer files), a user's template file, raw
text; the sandbox; a ShareGPT file profiled end to end on real SmolLM2 weights, and prompts sized in its tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specwise.cli import main
from specwise.errors import SpecwiseError
from specwise.profiler import models
from specwise.profiler.templates import TemplateChoice, render, resolve
from specwise.prompts.items import ChatMessage, PromptItem
from specwise.prompts.synthetic import token_prompts
from specwise.prompts.tokenizer import load_tokenizer

SHAREGPT = Path(__file__).resolve().parents[2] / "examples" / "datasets" / "sharegpt_sample.json"
ITEM = PromptItem("And again?", "chat", history=(ChatMessage("user", "Hello"), ChatMessage("assistant", "Hi!")))


def test_auto_none_and_file_templates_render_what_a_chat_server_sends(smollm2_dir: Path, tmp_path: Path) -> None:
    _, tok = models.load(models.resolve(str(smollm2_dir)))
    auto = resolve(TemplateChoice.parse("auto"), tok, smollm2_dir)
    assert auto.used == "model" and auto.sha256 and auto.source and Path(auto.source).parent == smollm2_dir
    [templated] = render([ITEM], auto, tok)
    assert not templated.add_special_tokens  # the template placed them (vLLM's chat default)
    assert templated.text.index("Hello") < templated.text.index("Hi!") < templated.text.index("And again?")
    assert templated.text.rstrip().endswith("assistant")  # the generation prompt opens the answer
    [raw] = render([ITEM], resolve(TemplateChoice.parse("none"), tok, smollm2_dir), tok)
    assert raw.text == "Hello\n\nHi!\n\nAnd again?" and raw.add_special_tokens
    mine = tmp_path / "t.jinja"
    mine.write_text("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>")
    applied = resolve(TemplateChoice.parse(str(mine)), tok, smollm2_dir)
    assert applied.to_json()["used"] == "file"
    assert render([ITEM], applied, tok)[0].text == "<user>Hello<assistant>Hi!<user>And again?<assistant>"
    mine.write_text("{{ ().__class__.__base__.__subclasses__() }}")  # the sandbox refuses Python internals
    with pytest.raises(SpecwiseError, match=r"t.jinja: failed on prompt 1 \(SecurityError: access to attribute"):
        render([ITEM], resolve(TemplateChoice.parse(str(mine)), tok, smollm2_dir), tok)
    with pytest.raises(SpecwiseError, match="expected auto, none or a Jinja template file"):
        TemplateChoice.parse(str(tmp_path / "missing.jinja"))


@pytest.mark.slow  # two profiles of nine multi-turn prompts: ~1-2 min on 2 cores
@pytest.mark.integration
def test_a_sharegpt_file_profiles_with_the_models_chat_template(
    smollm2_dir: Path, smollm2_draft24: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "profile.json"
    argv = ["profile", "--target", str(smollm2_dir), "--draft", str(smollm2_draft24), "--prompts", str(SHAREGPT),
            "--turns", "all", "--temperatures", "0", "--k", "1-3", "--max-new-tokens", "6", "--threads", "2",
            "--json", str(out)]  # fmt: skip
    assert main([*argv, "--chat-template", "auto"]) == 0
    doc = json.loads(out.read_text())
    assert doc["prompts"]["count"] == 9 and doc["prompts"]["turns"] == "all"
    assert doc["prompts"]["chat_template"]["used"] == "model"
    templated = {r["drafting"]: r["by_k"][-1]["acceptance_rate"] for r in doc["results"]}
    assert main([*argv, "--chat-template", "none"]) == 0
    raw = json.loads(out.read_text())
    assert raw["prompts"]["chat_template"] == {"used": "none", "source": None, "sha256": None}
    assert {r["drafting"]: r["by_k"][-1]["acceptance_rate"] for r in raw["results"]} != templated
    assert "chat template: model" in capsys.readouterr().out


def test_synthetic_prompts_sized_in_the_models_tokens(smollm2_dir: Path) -> None:
    tok = load_tokenizer(str(smollm2_dir))
    for size in (16, 200, 1000):
        prompts = token_prompts(3, size, seed=0, encoder=tok)
        assert len({p.prompt for p in prompts}) == 3
        for p in prompts:
            assert abs(len(tok.encode(p.prompt)) - size) <= 2  # re-encoding may merge across the cut
