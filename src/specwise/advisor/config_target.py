"""Which names and which vLLM ``advise``'s commands are written for: the catalog's ids for the models and the GPU
(what vLLM loads and the operator reads), and the vLLM version a ``--speculative-config`` is for -- ``--vllm-version``,
else the scenario's ``[deployment].engine_version`` when that version takes the JSON form (0.8.2 on), else the
current vLLM, said in a note when it replaces an older declared version (:class:`ConfigTarget`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from specwise.advisor.inputs import AdviseInputs, Candidate
from specwise.catalog import catalog_id, gpu_name
from specwise.contracts.advice import ServeCommand
from specwise.engines.vllm_versions import (
    CONFIG_JSON_SINCE,
    NEWEST_READ,
    V0_ERA_CONFIGS,
    VllmVersion,
    newer_than_read,
)
from specwise.errors import SpecwiseError


@dataclass(frozen=True)
class ConfigTarget:
    """The vLLM the commands are written for (``version`` None: the current one) and, when that is not the
    scenario's ``[deployment].engine_version`` because that version is too old for ``--speculative-config``, which
    version it is (``declared``): the simulation replays the declared one, the commands are for another."""

    version: str | None
    declared: str | None = None

    def engine_words(self) -> str:
        """The vLLM the config is for, in words."""
        return f"vLLM {VllmVersion.parse(self.version)}" if self.version is not None else "the current vLLM (V1)"

    def fix(self) -> str:
        """What to change so that another vLLM is the one the config is for, saying why it is this one when the
        scenario declared another."""
        if self.declared is None:
            return "change the engine version"
        return (
            f"give --vllm-version {V0_ERA_CONFIGS} for a V0-era command (the scenario's [deployment].engine_version "
            f"{self.declared} takes no --speculative-config, so the command is written for the current vLLM)"
        )

    def notes(self, simulated: bool = True) -> tuple[str, ...]:
        """That the commands are for the current vLLM, not the declared version the simulation replays (empty when
        they are for the version the operator or the scenario named); ``simulated`` False: nothing was (no
        candidate runs on the current vLLM), so nothing replayed the declared version either."""
        if self.version is not None:
            v = VllmVersion.parse(self.version)
            if not newer_than_read(v):
                return ()
            return (
                f"vLLM {v} is newer than any release specwise has read ({NEWEST_READ.major}.{NEWEST_READ.minor}): "
                f"this command and its --speculative-config are written as for {NEWEST_READ.major}."
                f"{NEWEST_READ.minor}; check the keys against your vLLM (vllm serve --help=SpeculativeConfig)",
            )
        if self.declared is None:
            return ()
        replayed = (
            "which the simulation replays (on the V0 engine)"
            if simulated
            else "which nothing here replays: no candidate runs on the current vLLM, so none was simulated"
        )
        return (
            f"this command is written for the current vLLM (V1), not the scenario's [deployment].engine_version "
            f"{self.declared}, {replayed}: vLLM before {CONFIG_JSON_SINCE} takes "
            "only separate --speculative-model / --num-speculative-tokens flags, which specwise does not write; for "
            f"a V0-era command (a draft model on its own GPUs, the schedule as disable_by_batch_size) give "
            f"--vllm-version {V0_ERA_CONFIGS}, or --vllm-version with the vLLM you run (either is simulated too)",
        )


def noted(serve: ServeCommand, written: ConfigTarget | None, simulated: bool = True) -> ServeCommand:
    """The serve command with, first among its notes, which vLLM it is written for when not the declared one
    (``simulated``: whether any candidate was)."""
    first = written.notes(simulated) if written is not None else ()
    return replace(serve, notes=first + serve.notes) if first else serve


def config_target(inputs: AdviseInputs, engine: str, engine_version: str | None) -> ConfigTarget | None:
    """Which vLLM the commands are for (None: another engine): ``--vllm-version`` when given, else the scenario's
    ``[deployment].engine_version`` from 0.8.2 on (:func:`config_version`), else the current one -- recording the
    declared version it replaces, so that the output says so."""
    if engine != "vllm":
        return None
    if engine_version is not None:
        return ConfigTarget(engine_version)
    version = config_version(inputs)
    declared = inputs.deployment.engine_version
    if version is not None or declared is None:
        return ConfigTarget(version)
    try:
        VllmVersion.parse(declared)
    except SpecwiseError:
        return ConfigTarget(None)  # a malformed version is reported where the step-time profile reads it
    return ConfigTarget(None, declared)


def config_version(inputs: AdviseInputs) -> str | None:
    """The vLLM a config is for when the operator names none: the scenario's ``[deployment].engine_version`` when
    that version takes ``--speculative-config`` (0.8.2 on); else None, the current vLLM (an older version is a
    published V0-era setup being replayed)."""
    text = inputs.deployment.engine_version
    try:
        version = VllmVersion.parse(text) if text is not None else None
    except SpecwiseError:
        return None  # a malformed version is reported where the step-time profile reads it
    return text if version is not None and version >= CONFIG_JSON_SINCE else None


def resolved_names(inputs: AdviseInputs) -> AdviseInputs:
    """The inputs with the target and the drafts as their catalog ids (``Llama-3.1-70B-Instruct`` ->
    ``meta-llama/Llama-3.1-70B-Instruct``: :func:`~specwise.catalog.catalog_id`) and the GPU as its catalog name
    (``h100`` -> ``H100-SXM-80GB``), as simulate and plan-memory show them: the serve command, the speculative
    config and the launch file carry these names, and vLLM loads exactly the repository it is given. A local
    checkpoint keeps its path; a name the catalog lacks is left for the scenario build to refuse, naming its field.
    A candidate's label made from its draft (``draft_model:DRAFT``, no ``name`` given) names the resolved draft,
    unless two labels would then be one."""
    dep = inputs.deployment
    deployment = replace(dep, target=catalog_id(dep.target), gpu=gpu_name(dep.gpu))
    candidates = tuple(_resolved_candidate(c) for c in inputs.candidates)
    if len({c.label for c in candidates}) < len(candidates):  # two spellings of one draft: keep the labels apart
        candidates = tuple(
            replace(new, label=old.label) for new, old in zip(candidates, inputs.candidates, strict=True)
        )
    return replace(inputs, deployment=deployment, candidates=candidates)


def _resolved_candidate(c: Candidate) -> Candidate:
    draft = c.speculation.draft
    if not draft:
        return c
    resolved = catalog_id(draft)
    label = f"{c.method.name}:{resolved}" if c.label == f"{c.method.name}:{draft}" else c.label
    return replace(c, label=label, speculation=replace(c.speculation, draft=resolved))
