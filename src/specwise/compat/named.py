"""A draft given by name checked against its target: the one path ``check-pair``, ``plan-memory`` and the API take.

:func:`draft_pair` resolves the draft (catalog id, path, EAGLE head, ``mtp``, ``ngram``, ``suffix``), gathers the
tokenizer files' evidence and runs :func:`~specwise.compat.pair.check_pair` with the deployment's
``max_model_len``; :func:`named_pair_report` is ``check-pair`` (the target by name too) and :func:`checked_draft`
is ``plan-memory``'s draft (refused when it cannot serve the target).
"""

from __future__ import annotations

from specwise.catalog import resolve_draft, resolve_model
from specwise.compat.pair import PairReport, check_pair, model_free_pair, no_mtp_pair
from specwise.compat.tokenizer_files import gather_tokenizer_evidence
from specwise.errors import CLI_FLAGS, FieldNames, NegativeAnswer, SpecwiseError
from specwise.extras import available
from specwise.memory.vllm_rules import draft_model_tp_refusal
from specwise.specs.draft import DraftChoice
from specwise.specs.model import ModelSpec


def draft_pair(
    target: ModelSpec,
    draft_name: str,
    max_model_len: int | None = None,
    names: FieldNames = CLI_FLAGS,
    *,
    encode: bool = True,
) -> tuple[DraftChoice | None, PairReport]:
    """The draft named ``draft_name`` resolved for ``target`` (None: ``mtp`` on a target without MTP layers) and
    its pair check, with the tokenizer files' evidence and ``max_model_len`` (the deployment's context; None: the
    target's), which may not exceed the target's positions. A model-free method is compatible with any target;
    ``mtp`` on a target without MTP layers is an incompatible pair, not bad input. ``encode``: compare sample
    encodings too when both tokenizers have tokenizer.json (needs the ``tokenizers`` extra; False compares the token
    tables only). ``names`` says how the messages name ``draft`` and ``max_model_len`` (flags, or the API's
    arguments)."""
    if max_model_len is not None and max_model_len > target.max_position_embeddings:
        raise SpecwiseError(
            f"{names.setting('max_model_len', max_model_len)} exceeds {target.name}'s max_position_embeddings "
            f"({target.max_position_embeddings}); vLLM refuses it"
        )
    if draft_name.strip().lower() == "mtp" and target.mtp_layers <= 0:
        return None, no_mtp_pair(target)
    choice, trained_for = resolve_draft(draft_name, target, field=names.name("draft"))
    if choice.spec is None:
        return choice, model_free_pair(target, choice.kind)
    evidence = gather_tokenizer_evidence(target.tokenizer, choice.spec.tokenizer, encode=encode)
    report = check_pair(
        target, choice.spec, tokenizer_evidence=evidence, head_trained_for=trained_for, max_model_len=max_model_len
    )
    return choice, report


def named_pair_report(
    target_name: str, draft_name: str, max_model_len: int | None = None, names: FieldNames = CLI_FLAGS
) -> PairReport:
    """The pair check of a target and a draft given by catalog id or path (the draft also an EAGLE head, ``mtp``,
    ``ngram`` or ``suffix``), with the tokenizer files' evidence (:func:`draft_pair`); ``names`` says how the
    messages name ``target``, ``draft`` and ``max_model_len`` (flags, or the API's arguments)."""
    target = resolve_model(target_name, field=names.name("target"))
    return draft_pair(target, draft_name, max_model_len, names)[1]


def checked_draft(
    target: ModelSpec,
    draft: str | None,
    draft_tp: int | None,
    draft_quantization: str,
    names: FieldNames = CLI_FLAGS,
    tp: int = 1,
    max_model_len: int | None = None,
) -> tuple[DraftChoice | None, PairReport | None]:
    """The draft resolved, and its pair check with the target at ``max_model_len`` (a draft with weights: a model,
    EAGLE head or MTP layers; :func:`draft_pair`): a draft that cannot serve the target is refused, and so are a
    draft TP or draft quantization with no draft weights to apply them to, and a separate draft model at a TP other
    than the target's ``tp``, which the current vLLM (V1) refuses, as ``simulate`` and ``advise`` do
    (:func:`~specwise.memory.vllm_rules.draft_model_tp_refusal`; an EAGLE head may still run at 1). The sample
    encodings are compared only where the ``tokenizers`` extra is installed (the token tables always).
    ``names``: how the caller names the settings."""
    choice, pair = None, None
    if draft is not None:  # an empty name is refused, never read as no draft
        choice, report = draft_pair(target, draft, max_model_len, names, encode=available("tokenizers"))
        spec = choice.spec if choice is not None and choice.kind == "model" else None
        if spec is not None and spec.draft_head is None and draft_tp is not None:  # an input error before a "no"
            refusal = draft_model_tp_refusal(None, draft_tp, tp, names.setting("draft_tp", tp))
            if refusal is not None:
                raise SpecwiseError(f"{names.setting('draft_tp', draft_tp)}, but {refusal}")
        if not report.compatible:
            raise NegativeAnswer(
                f"draft {report.draft} cannot serve target {target.name}: "
                + "; ".join(f.message for f in report.failures)
            )
        if choice is not None and choice.spec is not None:
            pair = report
    if choice is None or choice.spec is None:  # no draft, or n-gram / suffix: nothing to place
        given = [f for f, v in (("draft_tp", draft_tp), ("draft_quantization", draft_quantization))
                 if v not in (None, "auto")]  # fmt: skip
        if given:
            what = (
                f"{names.name('draft')} {draft} has no weights"
                if draft is not None
                else f"no {names.name('draft')} given"
            )
            raise SpecwiseError(f"{names.name(given[0])}: {what} to place or quantize")
    return choice, pair
