"""Which vLLM versions take a k-by-batch-size schedule, and in which form (``advise --vllm-version``).

The versions, with where each boundary comes from:

* **0.24 and later** -- ``num_speculative_tokens_per_batch_size``: ``[[first_batch, last_batch, k], ...]``
  (inclusive ranges; ``num_speculative_tokens`` stays the largest k, for buffer sizing). Added by vLLM PR #32374
  ("[V1][Spec Decode] Add Dynamic SD", merged 2026-05); 0.24.0 is the first release we can confirm has it
  (vllm-metal PR #463, "Bump vLLM to 0.24.0", adapts to it). Checked against vLLM 0.32's
  ``vllm/config/speculative.py``, where the field is ``list[tuple[int, int, int]] | None``;
  ``vllm/config/vllm.py`` turns it off (static k) when data parallelism is above 1.
* **0.10 to 0.23** -- no per-batch-size k. The V0 engine, the only one that read ``disable_by_batch_size``, was
  removed in 0.10.0 (vLLM PR #35060, which then removed the unused field: vLLM 0.32 rejects it as an unexpected
  keyword). The static k at the operating load is emitted, and the schedule as a note.
* **0.8.2 to 0.9** -- ``disable_by_batch_size`` in ``--speculative-config``: speculation off once that many
  requests are running -- honoured by the V0 engine only, which 0.8.3-0.8.5 run every speculative method on and 0.9.x a
  draft model (:func:`speculation_engine`; other methods there only with ``VLLM_USE_V1=0``); only the schedule's
  "k = 0 above batch B" band can be said this way.
* **before 0.8.2** -- separate ``--speculative-model`` / ``--num-speculative-tokens`` /
  ``--speculative-disable-by-batch-size`` flags only (``--speculative-config`` is first in 0.8.2's
  ``vllm/engine/arg_utils.py``; vLLM PR #15466, 2025-03, then removed the flags); not emitted: refused in one
  line. A version without its patch is its .0 (:meth:`VllmVersion.parse`), so ``0.8`` is refused with the rest.

A separate draft model (``method = "draft_model"``) has its own boundaries, :func:`draft_model_engine`; which engine
(V0 or V1) a speculating server of 0.8 and 0.9 runs on is :func:`speculation_engine`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from specwise.errors import SpecwiseError
from specwise.methods import HEAD_METHODS, METHODS

ScheduleForm = Literal["per_batch_size", "disable_by_batch_size", "none"]
# Release numbers (vLLM 0.10.1.1), then PEP 440-like pre-, post- and dev-release segments and a local part
# (0.24.0rc1, 0.6.3.post1, 0.10.1.dev12+gabc, 0.32.0+cpu), read loosely (0.9.1abc passes as a pre-release) but not
# free words: "0.9.x" was read as 0.9 (review s59); only X.Y.Z is kept (0.24.0rc1 counts as 0.24.0)
_VERSION = re.compile(
    r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.\d+)*(?:[.\-_]?(?:rc|a|b|c|alpha|beta|pre|preview|post|dev)[.\-_]?\d*)*(?:\+[0-9A-Za-z.\-_]+)?",
    re.IGNORECASE,
)


@dataclass(frozen=True, order=True)
class VllmVersion:
    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> VllmVersion:
        """``0.20``, ``0.20.1``, ``v0.24.0rc1``, ``0.32.0+cpu`` (pre-release and local parts are ignored)."""
        m = _VERSION.fullmatch(text.strip())
        if not m:
            raise SpecwiseError(f"--vllm-version {text!r}: expected a version like 0.20 or 0.24.1")
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


SCHEDULE_KEY_SINCE = VllmVersion(0, 24)  # num_speculative_tokens_per_batch_size (PR #32374)
# use_heterogeneous_vocab (vLLM PR #38174): a draft model whose vocabulary differs from the target's, method
# draft_model with greedy draft sampling only. Read in the wheels: the field is in 0.26.0 to 0.33.0's
# vllm/config/speculative.py (``use_heterogeneous_vocab: bool = False``; not in 0.24.0), and gone from 0.34.0's, whose
# config forbids unknown keys (``ConfigDict(extra="forbid")``) and always runs
# ``verify_equal_vocab_size_if_draft_model`` ("Target and draft model should have the same vocabulary size").
HETEROGENEOUS_VOCAB_SINCE = VllmVersion(0, 26)
HETEROGENEOUS_VOCAB_UNTIL = VllmVersion(0, 34)


def heterogeneous_vocab_refusal(version: VllmVersion | None, method: str, drafting: str) -> str | None:
    """Why ``version`` (None: the current vLLM, read as :data:`NEWEST_READ`) cannot serve a draft model with another
    vocabulary size (None: it can, with ``use_heterogeneous_vocab``): only 0.26 to 0.33 take the key, for
    ``draft_model`` with greedy draft sampling only (``SpeculativeConfig`` refuses the rest)."""
    since, until = HETEROGENEOUS_VOCAB_SINCE, HETEROGENEOUS_VOCAB_UNTIL
    served = f"use_heterogeneous_vocab is in vLLM {since.major}.{since.minor} to {until.major}.{until.minor - 1} only"
    if version is not None and version < since:
        return f"vLLM {version} refuses a draft whose vocabulary size differs ({served})"
    if version is None or version >= until:
        named = "the current vLLM" if version is None else f"vLLM {version}"
        return (
            f"{named} refuses a draft whose vocabulary size differs: {until.major}.{until.minor} removed "
            f"use_heterogeneous_vocab and requires equal sizes ({served}; give --vllm-version for one of them)"
        )
    if method != "draft_model":
        return "use_heterogeneous_vocab is for method draft_model only"
    if drafting != "greedy":
        return "use_heterogeneous_vocab takes greedy draft sampling only"
    return None


V0_REMOVED_IN = VllmVersion(0, 10)  # disable_by_batch_size stopped acting (PR #35060's description)
# --speculative-config JSON: first in 0.8.2's vllm/engine/arg_utils.py (0.8.0 and 0.8.1 have only the separate
# --speculative-model / --num-speculative-tokens flags), which PR #15466 then removed.
CONFIG_JSON_SINCE = VllmVersion(0, 8, 2)
# the vLLM versions whose config specwise writes with the schedule as disable_by_batch_size (the V0-era form)
V0_ERA_CONFIGS = f"{CONFIG_JSON_SINCE} to 0.9"
DRAFT_MODEL_V1_SINCE = VllmVersion(0, 15)  # V1's DraftModelProposer (PR #24322, merged 2026-01-19)
# the newest vLLM release whose wheel was read for the config's keys and the method rules here (the list above
# ``NAME_GUESS_UNTIL``): a later one is written as for it, and said (advisor/config_target.ConfigTarget.notes)
NEWEST_READ = VllmVersion(0, 34)


def newer_than_read(version: VllmVersion) -> bool:
    """A release (major.minor) after :data:`NEWEST_READ`: nothing here has read its config."""
    return (version.major, version.minor) > (NEWEST_READ.major, NEWEST_READ.minor)


DraftModelEngine = Literal["v0", "none", "v1"]


def draft_model_engine(version: VllmVersion | None) -> DraftModelEngine:
    """Which vLLM engine runs a separate draft model on ``version`` (None: the current one), checked in the released
    sources of each boundary:

    * **before 0.10** -- ``"v0"``: 0.8 and 0.9 default to V1, which had no draft-model proposer, and fall back to
      V0 for it (``vllm/engine/arg_utils.py`` ``_is_v1_supported_oracle`` -> ``_raise_or_fallback("Speculative
      Decoding")``, 0.8.5 and 0.9.2; ``VLLM_USE_V1=1`` turns the fallback into an error). V0 runs the draft at any
      tensor parallelism, 1 included (``speculative_draft_tensor_parallel_size``).
    * **0.10 to 0.14** -- ``"none"``: V0 is gone and the server refuses at start with "Speculative decoding with
      draft model is not supported yet" (0.10.0 ``vllm/engine/arg_utils.py``; 0.11.0 to 0.14.1
      ``vllm/config/speculative.py``).
    * **0.15 on** -- ``"v1"``: ``vllm/v1/spec_decode/draft_model.py`` (vLLM PR #24322; first in the 0.15.0 wheel),
      which runs the draft only at the target's tensor parallelism (``_raise_if_draft_tp_mismatch``: "must be the
      same").
    """
    if version is None or version >= DRAFT_MODEL_V1_SINCE:
        return "v1"
    return "v0" if version < V0_REMOVED_IN else "none"


V1_DEFAULT_SINCE = VllmVersion(0, 8)  # V1 the default engine (create_engine_config's oracle)
SPECULATION_V1_SINCE = VllmVersion(0, 9)  # the oracle's opt-in-only ngram/Eagle gate was gone in 0.9.0

# The methods 0.9.0 to 0.9.2's oracle keeps on V1, by specwise's name and by vLLM's own where it differs
# ("deepseek_mtp" is vLLM's name for specwise's "mtp" before 0.11; "medusa" has no specwise row).
_V1_ON_0_9 = frozenset({"ngram", "eagle", "eagle3", "mtp", "deepseek_mtp", "medusa"})

SpeculationEngine = Literal["v0", "v1"]


def speculation_engine(version: VllmVersion | None, method: str | None) -> SpeculationEngine:
    """Which vLLM engine a server of ``version`` (None: the current one) runs with speculative ``method`` (None or
    ``"none"``: no speculation), ``VLLM_USE_V1`` unset, read in ``vllm/engine/arg_utils.py``
    (``create_engine_config``, ``_is_v1_supported_oracle``) of the 0.8.0, 0.8.1, 0.8.2, 0.8.3, 0.8.4, 0.8.5,
    0.8.5.post1, 0.9.0, 0.9.0.1, 0.9.1, 0.9.2 and 0.10.0 wheels:

    * **before 0.8** -- ``"v0"``, speculating or not (V1 was opt-in).
    * **0.8.2** -- ``"v1"`` for every method (:data:`CONFIG_BLIND_ORACLE`): its oracle tests only the old
      ``--speculative-model`` / ``--num-speculative-tokens`` flags, which a ``--speculative-config`` leaves unset;
      :func:`method_refusal` refuses every method but n-gram there.
    * **0.8.x** (the others) -- ``"v0"`` for every method; ``"v1"`` without speculation. With ``VLLM_USE_V1``
      unset, "we enable V1 for 'supported features' and fall back to V0 for experimental or unsupported features"
      (``create_engine_config``), and no speculative method was a supported feature: the oracle let through only
      n-gram (0.8.0/0.8.1: ``speculative_model == "[ngram]"``; 0.8.2: ``("ngram", "[ngram]")``), n-gram and
      ``"eagle"`` (0.8.3, 0.8.4), n-gram, ``"eagle"`` and ``"eagle3"`` (0.8.5) -- anything else,
      ``deepseek_mtp``, medusa and a draft model included, is ``_raise_or_fallback("Speculative Decoding")`` --
      and then sent those back to V0 too as experimental (``_warn_or_fallback("ngram")``, ``("Eagle")``: "is
      experimental on VLLM_USE_V1=1. Falling back to V0 Engine."). Only ``VLLM_USE_V1=1`` ran those on V1.
    * **0.9.0 to 0.9.2** -- ``"v1"`` for ngram, medusa, eagle, eagle3 and deepseek_mtp (specwise's ``mtp``): the
      oracle's ``speculative_method in ("eagle", "eagle3", "deepseek_mtp")`` / ``== "medusa"`` / ngram, with
      the experimental gate gone; ``"v0"`` for a draft model (:func:`draft_model_engine`) and any other method.
    * **0.10 on** -- ``"v1"``: V0 is gone (a draft model on 0.10 to 0.14 is refused, :func:`draft_model_refusal`;
      it is priced on V1 as before).

    A version without its patch (``0.8``) is its .0, as :meth:`VllmVersion.parse` reads it; no boundary here
    falls inside a minor release, so every patch of it gets the same answer.
    """
    if version is None:
        return "v1"
    if version < V1_DEFAULT_SINCE:
        return "v0"
    if method is None or method == "none":
        return "v1"
    if version == CONFIG_BLIND_ORACLE:
        return "v1"
    if method == "draft_model":
        return "v0" if draft_model_engine(version) == "v0" else "v1"
    if version >= V0_REMOVED_IN:
        return "v1"
    if version < SPECULATION_V1_SINCE:
        return "v0"
    return "v1" if method in _V1_ON_0_9 else "v0"


# The first release whose --speculative-config takes the method under the name specwise writes, read in each
# release's sources (vllm/config.py before 0.11, vllm/config/speculative.py after): "eagle3" from 0.8.5, the
# first release with the name anywhere in vllm/ (``llama_eagle3.py``, ``SpeculativeConfig`` keeping
# method "eagle3"; 0.8.0 to 0.8.4 have neither, and its SpeculativeMethod literal gained it only later, which a
# plain dataclass does not check); "mtp" from 0.11.0 (0.10 knew only "deepseek_mtp"); "suffix" from 0.11.1 (not in
# 0.11.0's list; 0.11.1 and 0.11.2 list it with its suffix_decoding_* fields).
METHOD_SINCE = {"eagle3": VllmVersion(0, 8, 5), "mtp": VllmVersion(0, 11), "suffix": VllmVersion(0, 11, 1)}


# 0.8.2 reads --speculative-config (``EngineArgs.create_speculative_config``) but chooses its engine in
# ``_is_v1_supported_oracle`` from the old --speculative-model / --num-speculative-tokens flags alone ("Only Ngram
# speculative decoding so far": ``if self.speculative_model is not None or self.num_speculative_tokens is not
# None``), unset with a --speculative-config; so every method goes to V1, whose 0.8.2 model runner asserts
# ``method == "ngram"`` ("Currently, only ngram spec decode is supported in V1"). 0.8.3 reads the config's method.
CONFIG_BLIND_ORACLE = VllmVersion(0, 8, 2)


def method_refusal(version: VllmVersion | None, method: str, draft: str | None = None) -> str | None:
    """Why vLLM ``version`` cannot serve ``method`` (with ``draft``, when given) as specwise writes it, in one line
    (None: it can)."""
    if version == CONFIG_BLIND_ORACLE and method != "ngram":
        return (
            f"vLLM {version} starts a --speculative-config server on its V1 engine (it picks the engine from the old "
            f"--speculative-model flag, unset here), and V1 {version} speculates with n-gram only: use vLLM 0.8.3+, "
            "or start the server with VLLM_USE_V1=0 (V0 runs it)"
        )
    if (misread := draft_name_refusal(version, method, draft)) is not None:
        return misread
    if method == "draft_model":
        return draft_model_refusal(version)
    since = METHOD_SINCE.get(method)
    if version is None or since is None or version >= since:
        return None
    first = f"{since.major}.{since.minor}" + (f".{since.patch}" if since.patch else "")
    return (
        f"vLLM {version} has no speculative method {method!r} (its --speculative-config takes it from "
        f"{first}): upgrade vLLM, or choose a method this version has"
    )


# The targets an EAGLE-3 head may serve, as ``SpeculativeConfig`` checks them (a substring of the target's
# ``hf_text_config.model_type``), read in the wheels: 0.8.5 to 0.10 "llama" only ("Eagle3 is only supported for Llama
# models": 0.8.5 and 0.9.2 vllm/config.py, 0.10.0's); 0.11.0 to 0.15.0 ``eagle3_target_supported`` = llama, qwen,
# minicpm, gpt_oss (vllm/config/speculative.py); 0.16.0 adds hunyuan_vl, hunyuan_v1_dense and afmoe (0.17 was not read
# and is taken as 0.16); 0.18.0 renames the list ``aux_hidden_states_supported`` and adds nemotron_h, deepseek_v2,
# deepseek_v3, kimi_k2 and kimi_k25 (0.19 not read: taken as 0.18), 0.20.0 minimax_m2 and gemma4, 0.21.0 laguna;
# 0.22.0 and later check no target (review s46c: 0.18 to 0.21 were first taken as checking none).
_E3_016 = ("llama", "qwen", "minicpm", "gpt_oss", "hunyuan_vl", "hunyuan_v1_dense", "afmoe")
_E3_018 = (*_E3_016, "nemotron_h", "deepseek_v2", "deepseek_v3", "kimi_k2", "kimi_k25")
_EAGLE3_TARGETS: tuple[tuple[VllmVersion, tuple[str, ...]], ...] = (
    (VllmVersion(0, 11), ("llama",)),
    (VllmVersion(0, 16), ("llama", "qwen", "minicpm", "gpt_oss")),
    (VllmVersion(0, 18), _E3_016),
    (VllmVersion(0, 20), _E3_018),
    (VllmVersion(0, 21), (*_E3_018, "minimax_m2", "gemma4")),
    (VllmVersion(0, 22), (*_E3_018, "minimax_m2", "gemma4", "laguna")),
)
EAGLE3_ANY_TARGET_SINCE = VllmVersion(0, 22)


def eagle3_target_refusal(version: VllmVersion | None, method: str, target_model_type: str) -> str | None:
    """Why vLLM ``version`` refuses an EAGLE-3 head for a target of ``target_model_type`` (the Hugging Face
    ``model_type``) at start, in one line (None: it takes it, or the method is not eagle3)."""
    if method != "eagle3" or version is None:
        return None
    for until, supported in _EAGLE3_TARGETS:
        if version < until:
            if any(name in target_model_type for name in supported):
                return None
            return (
                f"vLLM {version} runs an EAGLE-3 head only for a {' / '.join(supported)} target (its "
                f'SpeculativeConfig refuses model_type {target_model_type!r} at start: "Eagle3 is only supported '
                f'for ... models"); vLLM 0.22+ takes any target'
            )
    return None


# A draft checkpoint's method guessed from its name, over the ``method`` given (``SpeculativeConfig.__post_init__``,
# "Automatically detect the method": vllm/config.py to 0.10, vllm/config/speculative.py after; read in the 0.8.2,
# 0.8.3, 0.8.4, 0.8.5, 0.9.2, 0.10.0, 0.11.0, 0.12.0, 0.15.0, 0.20.0, 0.26.0, 0.32.0, 0.33.0 and 0.34.0 wheels):
# * 0.8.2 to 0.8.4 guess for every method: "eagle" if the name holds "eagle-", else "draft_model" (or medusa /
#   mlp_speculator by model_type);
# * 0.8.5 keeps a given "eagle" / "eagle3" and guesses for the rest: "eagle" for "eagle-" or "eagle3-" (to 0.10);
#   0.11 to 0.33: "eagle" for "eagle-", "eagle3" for "eagle3";
# * 0.34 guesses only when no method is given (``_resolve_checkpoint_config_class``).
NAME_GUESS_UNTIL = VllmVersion(0, 34)
_EAGLE_KEEPS_GIVEN_SINCE = VllmVersion(0, 8, 5)
_EAGLE3_NAME_SINCE = VllmVersion(0, 11)


def _guessed_method(version: VllmVersion, draft: str) -> str:
    """The method vLLM ``version`` (0.8.2 to 0.33) guesses from the draft's name, for a draft model or EAGLE head."""
    name = draft.lower()
    if version >= _EAGLE3_NAME_SINCE:
        return "eagle" if "eagle-" in name else "eagle3" if "eagle3" in name else "draft_model"
    if version >= _EAGLE_KEEPS_GIVEN_SINCE:
        return "eagle" if "eagle-" in name or "eagle3-" in name else "draft_model"
    return "eagle" if "eagle-" in name else "draft_model"


def draft_name_refusal(version: VllmVersion | None, method: str, draft: str | None) -> str | None:
    """Why vLLM ``version`` would run ``draft`` as another method than ``method``, in one line (None: it would not).

    0.8.2 to 0.8.4 load an EAGLE head whose name lacks "eagle-" as a separate draft model (it is not one: the server
    fails to load it); 0.8.2 to 0.33 run a draft model whose name holds "eagle-" (or "eagle3") as an EAGLE head
    (the guess above). None for the current vLLM (``version`` None), which keeps the method given."""
    if version is None or draft is None or not CONFIG_JSON_SINCE <= version < NAME_GUESS_UNTIL:
        return None
    if method not in ("draft_model", "eagle") or (method == "eagle" and version >= _EAGLE_KEEPS_GIVEN_SINCE):
        return None
    guessed = _guessed_method(version, draft)
    if guessed == method:
        return None
    runs_as = "a separate draft model" if guessed == "draft_model" else f"an {guessed.upper()} head"
    fix = (
        "serve it from a directory whose name holds 'eagle-', or use vLLM 0.8.5+, which keeps a given eagle"
        if method == "eagle"
        else f"serve it from a directory whose name holds neither 'eagle-' nor 'eagle3', or use vLLM "
        f"{NAME_GUESS_UNTIL.major}.{NAME_GUESS_UNTIL.minor}+, which keeps the method given"
    )
    return (
        f"vLLM {version} guesses the method of {draft} from its name, over the 'method' given, and would run it as "
        f"{runs_as}: {fix}"
    )


def draft_model_refusal(version: VllmVersion | None) -> str | None:
    """Why vLLM ``version`` cannot serve a separate draft model, in one line (None: it can)."""
    if draft_model_engine(version) != "none":
        return None
    return (
        f'vLLM {version} cannot run a separate draft model: 0.10 to 0.14 refuse it at start ("Speculative decoding '
        f'with draft model is not supported yet"); vLLM {DRAFT_MODEL_V1_SINCE.major}.{DRAFT_MODEL_V1_SINCE.minor}+ '
        "runs one (PR #24322); or use a method this version has (EAGLE, MTP, n-gram)"
    )


def served_draft_tp(version: VllmVersion | None, method: str, draft_tp: int | None, target_tp: int) -> int:
    """The tensor parallelism vLLM ``version`` (None: the current one) runs ``method``'s draft at, given the
    ``draft_tp`` asked (None: not set):

    * an EAGLE / EAGLE-3 head on the V0 engine (:func:`speculation_engine`: 0.8.3 to 0.8.5) -- 1: V0's
      ``SpecDecodeWorker.create_worker`` runs a head at TP 1 only ("eagle does not support TP > 1 yet", 0.8.3
      ``vllm/spec_decode/spec_decode_worker.py``; :func:`head_tp_refusal` refuses more);
    * an EAGLE / EAGLE-3 / MTP head on V1 -- the target's: V1's proposer builds the head with the target's parallel
      config (0.10.0 ``vllm/v1/spec_decode/eagle.py`` ``load_model``: ``get_model(vllm_config=self.vllm_config,
      ...)``); nothing under ``vllm/v1`` reads ``draft_parallel_config`` (0.10.0 to 0.34.0), so
      ``draft_tensor_parallel_size = 1`` is accepted and ignored;
    * a separate draft model on V1 (0.15 on) -- the target's (``_raise_if_draft_tp_mismatch``); on V0, as asked;
    * else as asked, the target's when not set."""
    proposer = METHODS[method].proposer if method in METHODS else None
    if proposer == "head" and speculation_engine(version, method) == "v0":
        return 1
    if proposer in ("head", "target_layers"):
        return target_tp
    if method == "draft_model" and draft_model_engine(version) == "v1":
        return target_tp
    return draft_tp or target_tp


def head_tp_refusal(version: VllmVersion | None, method: str, draft_tp: int | None) -> str | None:
    """Why vLLM ``version`` cannot run ``method``'s head at ``draft_tp`` (None: it can, or none is asked): V0 runs an
    EAGLE head at TP 1 only (:func:`served_draft_tp`)."""
    if draft_tp is None or draft_tp <= 1 or method not in HEAD_METHODS:
        return None
    if speculation_engine(version, method) != "v0":
        return None
    return (
        f'vLLM {version} runs {method} on its V0 engine, which runs an EAGLE head on one GPU only ("eagle does not '
        f'support TP > 1 yet"): set draft_tp = 1 or leave it unset, or use vLLM 0.9+ (V1 runs the head at the '
        "target's tensor parallelism)"
    )


# Drafting from the draft's distribution (``drafting = "probabilistic"``) rather than its argmax, as each release's
# ``vllm/config/speculative.py`` spells it: ``draft_sample_method = "probabilistic"`` from 0.22 (the field and value
# read in the 0.22.0 to 0.34.0 wheels; 0.26's ``v1/spec_decode/llm_base_proposer.py`` acts on it); 0.21 names it
# "gumbel" and applies it "only to Model Runner V2"; 0.18 to 0.20 call it ``rejection_sample_method =
# "probabilistic"`` ("yields a higher acceptance rate at the cost of more memory to cache draft logits"); 0.16 and
# before have no such setting (their drafts are greedy); 0.17 was not read and is taken as 0.16 (refused). Unknown
# keys are refused: a field a release lacks stops its server (``extra="forbid"`` from 0.11, ``cls(**dict)`` before).
PROBABILISTIC_DRAFTING_SINCE = VllmVersion(0, 22)
_REJECTION_SAMPLE_METHOD = (VllmVersion(0, 18), VllmVersion(0, 21))


def probabilistic_drafting_key(version: VllmVersion | None) -> tuple[str, str] | None:
    """The ``--speculative-config`` key and value asking vLLM ``version`` to draft probabilistically; None where no
    setting does it as the simulation prices it (:func:`drafting_refusal` says why)."""
    if version is None or version >= PROBABILISTIC_DRAFTING_SINCE:
        return "draft_sample_method", "probabilistic"
    if _REJECTION_SAMPLE_METHOD[0] <= version < _REJECTION_SAMPLE_METHOD[1]:
        return "rejection_sample_method", "probabilistic"
    return None


def drafting_refusal(version: VllmVersion | None, drafting: str, samples_from_a_distribution: bool) -> str | None:
    """Why vLLM ``version`` cannot draft as a candidate's ``drafting`` says, in one line (None: it can, or the method
    proposes fixed tokens and has no drafting mode)."""
    if drafting != "probabilistic" or not samples_from_a_distribution or probabilistic_drafting_key(version):
        return None
    where = (
        "only on its V2 model runner (draft_sample_method 'gumbel')"
        if version is not None and (version.major, version.minor) == (0, 21)
        else "not at all (greedy drafts only)"
    )
    return (
        f"vLLM {version} drafts probabilistically {where}: its --speculative-config takes rejection_sample_method "
        f"'probabilistic' in 0.18 to 0.20 and draft_sample_method 'probabilistic' from 0.22; upgrade vLLM, or set "
        'drafting = "greedy"'
    )


DYNAMIC_K_CAVEAT = (
    "with num_speculative_tokens_per_batch_size, vLLM (0.26+) runs PIECEWISE instead of full CUDA graphs unless "
    "VLLM_USE_V2_MODEL_RUNNER=1, and ignores the schedule (static k) with data parallelism > 1 "
    "(vllm/config/vllm.py: _maybe_override_dynamic_sd_cudagraph_mode, _maybe_disable_dynamic_sd_for_data_parallel); "
    "the simulation does not model either: bench the config as you will deploy it"
)
# 0.24.0's vllm/config/vllm.py: PIECEWISE always (its _maybe_override_dynamic_sd_cudagraph_mode has no V2-runner
# exception, and the V2 model runner lists "dynamic speculative decoding" as unsupported); no data-parallel
# fallback (_maybe_disable_dynamic_sd_for_data_parallel is first in 0.26.0's).
DYNAMIC_K_SINCE_CAVEATS = VllmVersion(0, 26)


def dynamic_k_caveat(version: VllmVersion | None) -> str:
    """What vLLM ``version`` (None: the current one) does with a k-by-batch-size schedule that the simulation does
    not model."""
    if version is None or version >= DYNAMIC_K_SINCE_CAVEATS:
        return DYNAMIC_K_CAVEAT
    return (
        f"with num_speculative_tokens_per_batch_size, vLLM {version} runs PIECEWISE instead of full CUDA graphs (its "
        "V2 model runner does not take the schedule), and keeps the schedule with data parallelism > 1, where ranks "
        "may pick different k (0.26 falls back to a static k there) (vllm/config/vllm.py: "
        "_maybe_override_dynamic_sd_cudagraph_mode); the simulation does not model either: bench the config as you "
        "will deploy it"
    )


def schedule_form(version: VllmVersion | None) -> ScheduleForm:
    """How ``version`` (None: the current one) takes a k-by-batch-size schedule."""
    if version is not None and version < CONFIG_JSON_SINCE:
        raise SpecwiseError(
            f"--vllm-version {version}: vLLM before {CONFIG_JSON_SINCE} takes only separate --speculative-model / "
            "--num-speculative-tokens flags, which specwise does not write (a version without its patch is its .0); "
            f"give the exact version if it is {CONFIG_JSON_SINCE} or later, upgrade vLLM, or give "
            f"{CONFIG_JSON_SINCE} and translate the --speculative-config keys"
        )
    if version is None or version >= SCHEDULE_KEY_SINCE:
        return "per_batch_size"
    return "none" if version >= V0_REMOVED_IN else "disable_by_batch_size"


def first_off_batch(schedule: Sequence[tuple[int, int, int]]) -> int | None:
    """The smallest batch from which the schedule keeps k at 0 for every larger batch (None: it never does)."""
    off: int | None = None
    for first, _last, k in sorted(schedule):
        if k == 0 and off is None:
            off = first
        elif k != 0:
            off = None
    return off


def schedule_text(schedule: Sequence[tuple[int, int, int]]) -> str:
    return ", ".join(f"k={k} for batch {a}-{b}" for a, b, k in schedule)


def schedule_notes(
    version: VllmVersion | None, schedule: Sequence[tuple[int, int, int]], k: int, method: str | None = None
) -> tuple[str, ...]:
    """What the config for ``version`` cannot say of ``schedule``, in words the operator can act on; ``method`` (None:
    not known) says whether the engine that runs it honours ``disable_by_batch_size`` (:func:`speculation_engine`)."""
    form = schedule_form(version)
    if not schedule or form == "per_batch_size":
        return ()
    upgrade = (
        f"vLLM {SCHEDULE_KEY_SINCE.major}.{SCHEDULE_KEY_SINCE.minor}+ takes it as num_speculative_tokens_per_batch_size"
    )
    off = first_off_batch(schedule)
    if form == "disable_by_batch_size":
        said = (
            _disable_said(version, off, method)
            if off is not None
            else "no band switches speculation off, so nothing of it can be said here"
        )
        return (
            f"vLLM {version} has no per-batch-size k; the advised schedule is {schedule_text(schedule)}: {said}; "
            f"k={k} elsewhere. {upgrade}.",
        )
    return (
        f"vLLM {version} has no per-batch-size k: this config runs k={k} at every batch size; the advised schedule "
        f"is {schedule_text(schedule)}. {upgrade}"
        + (f"; meanwhile, speculation costs latency above batch {off - 1}." if off is not None else "."),
    )


def _disable_said(version: VllmVersion | None, off: int, method: str | None) -> str:
    """What ``disable_by_batch_size={off}`` does on ``version`` for ``method``: V0 honours it, V1 ignores it."""
    turns = f"disable_by_batch_size={off} turns speculation off from batch {off}"
    if method is None:
        return f"{turns}, on the V0 engine only (V1 ignores it; 0.8.3-0.8.5 run every speculative method on V0)"
    if speculation_engine(version, method) == "v0":
        return f"{turns} (vLLM {version} runs {method} on the V0 engine, which honours it)"
    return (
        f"{turns} on the V0 engine only: vLLM {version} runs {method} on V1, which ignores it, unless the server "
        "starts with VLLM_USE_V1=0"
    )


def vllm_version_text(text: str) -> str:
    """A ``--vllm-version`` (the API's ``vllm_version``) the serve config can be written for: a malformed or
    too-old version is refused in one line, before any work (:class:`~specwise.values.ValueRefusal`)."""
    from specwise.values import ValueRefusal

    try:
        schedule_form(VllmVersion.parse(text))
    except SpecwiseError as exc:  # the caller names the flag or argument
        raise ValueRefusal(str(exc).removeprefix("--vllm-version ")) from None
    return text


V0_LONG_CONTEXT_TOKENS = 32768  # above it, V0 turns chunked prefill on by default without speculation


def baseline_chunked_prefill(version: VllmVersion | None, max_model_len: int) -> bool:
    """Whether a vLLM ``version`` server with no speculation prefills in chunks beside decodes (review s48b F1).
    V1 (0.8 on, the default engine) always does; V0 (before 0.8) as :func:`v0_chunked_prefill` says."""
    if version is None or version >= V1_DEFAULT_SINCE:
        return True
    return v0_chunked_prefill(max_model_len)


def v0_chunked_prefill(max_model_len: int) -> bool:
    """Whether vLLM's V0 engine with no speculation prefills in chunks: it left ``enable_chunked_prefill`` unset to
    mean off, except for a long context: ``EngineArgs.create_engine_config`` (vllm/engine/arg_utils.py, 0.6.x-0.7.x)
    sets ``use_long_context = max_model_len > 32768`` and turns chunked prefill on only then ("enable chunked prefill
    by default for long context (> 32K) models"), else ``self.enable_chunked_prefill = False``; V0's scheduler then
    prefills whole prompts in steps of their own ("Don't schedule decodes if prefills are scheduled",
    ``Scheduler._schedule_default``), as it does with speculation."""
    return max_model_len > V0_LONG_CONTEXT_TOKENS


DEFAULT_UNCHUNKED_BUDGET_TOKENS = 2048  # vllm/config.py _DEFAULT_MAX_NUM_BATCHED_TOKENS


def unchunked_token_budget(max_num_batched_tokens: int | None, max_model_len: int) -> int:
    """The tokens a step of a server that prefills whole prompts may schedule: without chunked prefill vLLM (V0 and
    V1) defaults ``max_num_batched_tokens`` to ``max(max_model_len, 2048)`` (``SchedulerConfig.__post_init__``) and
    refuses a budget below ``max_model_len`` ("max_num_batched_tokens (...) is smaller than max_model_len",
    ``SchedulerConfig._verify_args``), so a prompt of any admitted length fits one step."""
    if max_num_batched_tokens is None:
        return max(max_model_len, DEFAULT_UNCHUNKED_BUDGET_TOKENS)
    return max(max_num_batched_tokens, max_model_len)


# The first release whose server runs async scheduling by default (the engine schedules step n+1 while the GPU
# runs step n), with no speculation and per speculative method, read in the released wheels'
# vllm/config/vllm.py (``VllmConfig.__post_init__``'s auto branch; ``SchedulerConfig.async_scheduling`` None from
# 0.14): plain decoding from 0.14.0 (PR #27614; False up to 0.13.0); EAGLE, EAGLE-3 and MTP from 0.14.0 (PR
# #31998: "It will still be disabled implicitly for non-EAGLE/MTP types"); a draft model from 0.28.0 (PR #48341;
# "off, with a warning" in 0.14.1-0.26.0, 0.27 not read); CPU n-gram from 0.33.0 (its default V2 model runner
# lifts the method check), suffix from 0.34.0 (the V1 runner removed). A CPU proposer needs the sampled tokens on
# the host each step (PR #24799: "ngram and medusa rely on cpu's sample_token_ids"), so those ran serially.
# 0.14 to 0.18 are taken as fully overlapped with speculation too, though their async path still waited on the
# drafts once a step: the "zero-bubble" rework of 0.19 (PR #32951) measured TPOT 9.19 -> 8.90 ms (-3%) over it
# (DeepSeek-V3.2, MTP k=1, H100), so those releases are priced up to ~3% fast.
ASYNC_PLAIN_SINCE = VllmVersion(0, 14)
ASYNC_SPECULATION_SINCE = {
    "eagle": VllmVersion(0, 14),
    "eagle3": VllmVersion(0, 14),
    "mtp": VllmVersion(0, 14),
    "draft_model": VllmVersion(0, 28),
    "ngram": VllmVersion(0, 33),
    "suffix": VllmVersion(0, 34),
}


def async_scheduling(version: VllmVersion | None, method: str | None) -> bool:
    """Whether a vLLM ``version`` server (None: the current one) runs async scheduling by default with speculative
    ``method`` (None or ``"none"``: plain decoding), on a single node (the ``uni`` / ``mp`` executors; Ray and
    pipeline parallelism, which specwise does not plan, turn it off in some releases)."""
    if method in (None, "none"):
        since: VllmVersion | None = ASYNC_PLAIN_SINCE
    else:
        since = ASYNC_SPECULATION_SINCE.get(str(method))
    return since is not None and (version is None or version >= since)
