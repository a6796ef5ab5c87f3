"""The hardening case table: every input class a user (or a hostile file or server) can hand the CLI.

Each :class:`Case` is one ``specwise`` invocation; ``expect`` is the exit code it must give (None: any clean
outcome -- 0/1 without a traceback or 2 with one line -- because the mutated value may be legal). Files are
written under ``root`` when the cases are built.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hardening.mutate import apply, dump_json, dump_toml, mutations

ROOT = Path(__file__).resolve().parents[2]
SIM_EXAMPLE = ROOT / "examples" / "llama70b-4xh100.toml"
ADVISE_EXAMPLE = ROOT / "examples" / "advise" / "summarize-low-qps.toml"


@dataclass(frozen=True)
class Case:
    group: str
    name: str
    argv: tuple[str, ...]
    expect: int | None = 2
    fragment: str | None = None  # must appear in the one stderr line (expect == 2)


def small_sim_scenario() -> dict[str, Any]:
    """The documented simulate example, shrunk so that a legal mutation still runs in well under a second."""
    doc = tomllib.loads(SIM_EXAMPLE.read_text())
    doc["speculation"]["k"] = [0, 2]
    doc["sweep"].update(qps=[1, 8], num_requests=40, arrivals="gamma", burstiness_cv=2.0)
    return doc


def small_advise_scenario() -> dict[str, Any]:
    doc = tomllib.loads(ADVISE_EXAMPLE.read_text())
    doc["sweep"].update(qps=[0.5, 4], num_requests=40)
    for cand in doc["candidate"]:
        cand["k"] = [0, 3]
    return doc


def profile_doc() -> dict[str, Any]:
    return {
        "schema": "specwise.profile/1",
        "method": "ngram",
        "target": "meta-llama/Llama-3.1-70B-Instruct",
        "draft": None,
        "settings": {"prompt_lookup_min": 2, "prompt_lookup_max": 4},
        "results": [
            {
                "temperature": 0.0,
                "drafting": "greedy",
                "quantization": {},
                "class": None,
                "alpha_mean": 0.3,
                "per_position_acceptance": [0.4, 0.3, 0.2],
                "by_k": [{"k": 3, "per_position_acceptance": [0.4, 0.3, 0.2]}],
            }
        ],
    }


def bench_doc() -> dict[str, Any]:
    def level(spec: dict[str, Any] | None) -> dict[str, Any]:
        pct = {"mean": 0.02, "p50": 0.02, "p90": 0.03, "p99": 0.04}
        return {
            "level": 0,
            "requests": 20,
            "failed": 0,
            "ttft_s": pct,
            "tpot_s": pct,
            "itl_s": pct,
            "e2e_s": pct,
            "output_tokens_per_s": 100.0,
            "request_rate_per_s": 1.0,
            "goodput_per_s": None,
            "target_rate_per_s": 1.0,
            "spec_decode": spec,
        }

    counts = {
        "engine": "vllm",
        "spec_decode_num_drafts": 100.0,
        "spec_decode_draft_tokens": 300.0,
        "spec_decode_accepted_tokens": 90.0,
        "spec_decode_per_position_acceptance_rates": [0.45, 0.3, 0.15],
    }
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "prompt_lookup_max": 4}
    return {
        "schema": "specwise.bench/1",
        "run_id": "r",
        "db": "x.sqlite",
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "configs": [
            {"name": "baseline", "speculative_config": None, "levels": [level(None)]},
            {"name": "ngram", "speculative_config": spec, "levels": [level(counts)]},
        ],
    }


LLAMA_TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
    "max_position_embeddings": 512,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": True,
}


def _write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def scenario_cases(root: Path) -> Iterator[Case]:
    base = small_sim_scenario()
    for i, m in enumerate(mutations(base)):
        f = _write(root, f"sim/{i}.toml", dump_toml(apply(base, m)))
        yield Case("simulate TOML", m.name, ("simulate", "--scenario", str(f), "--json", "--processes", "1"), None)


def advise_cases(root: Path) -> Iterator[Case]:
    base = small_advise_scenario()
    for i, m in enumerate(mutations(base)):
        f = _write(root, f"advise/{i}.toml", dump_toml(apply(base, m)))
        yield Case("advise TOML", m.name, ("advise", "--scenario", str(f), "--json", "--processes", "1"), None)


def evidence_cases(root: Path) -> Iterator[Case]:
    scenario = _write(root, "evidence/scenario.toml", dump_toml(small_advise_scenario()))
    for flag, base in (("--profile", profile_doc()), ("--bench", bench_doc())):
        for i, m in enumerate(mutations(base)):
            f = _write(root, f"evidence/{flag[2:]}-{i}.json", dump_json(apply(base, m)))
            argv = ("advise", "--scenario", str(scenario), flag, str(f), "--json", "--processes", "1")
            yield Case(f"advise {flag} JSON", m.name, argv, None)
    other = {
        "a bench result as --profile": ("--profile", bench_doc(), "is a specwise.bench document, expected"),
        "a profile as --bench": ("--bench", profile_doc(), "is a specwise.profile document, expected"),
        "a JSON list": ("--profile", [1, 2], "must be an object, got list"),
        "a scenario as --bench": ("--bench", {"name": "x", "deployment": {}}, "not a bench result specwise reads"),
        "a future schema": ("--profile", {**profile_doc(), "schema": "specwise.profile/9"}, "schema"),
    }
    for name, (flag, doc, fragment) in other.items():
        f = _write(root, f"evidence/{name.replace(' ', '_')}.json", json.dumps(doc))
        yield Case("wrong document kind", name, ("advise", "--scenario", str(scenario), flag, str(f)), 2, fragment)


def config_cases(root: Path) -> Iterator[Case]:
    for i, m in enumerate(mutations(LLAMA_TINY_CONFIG)):
        d = root / f"config/{i}"
        _write(d, "config.json", dump_json(apply(LLAMA_TINY_CONFIG, m)))
        yield Case("config.json", m.name, ("inspect", str(d), "--json"), None)


def file_cases(root: Path) -> Iterator[Case]:
    scenario = _write(root, "files/scenario.toml", dump_toml(small_advise_scenario()))
    sim = small_sim_scenario()
    binary = root / "files/binary.bin"
    binary.write_bytes(bytes(range(256)) * 64)
    empty = _write(root, "files/empty", "")
    nested = _write(root, "files/nested.toml", "x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    big_trace = dict(sim, workload=[dict(sim["workload"][0], trace_file="/dev/zero")])
    for name, path in (
        ("/dev/zero", Path("/dev/zero")),
        ("binary", binary),
        ("empty", empty),
        ("a directory", root),
        ("missing", root / "nope.toml"),
        ("100k-deep nesting", nested),
    ):
        yield Case("scenario file", name, ("simulate", "--scenario", str(path)), 2)
        yield Case("advise file", name, ("advise", "--scenario", str(path)), 2)
        yield Case("--profile file", name, ("advise", "--scenario", str(scenario), "--profile", str(path)), 2)
        yield Case("--bench file", name, ("advise", "--scenario", str(scenario), "--bench", str(path)), 2)
        yield Case("--calibration file", name, ("simulate", "--scenario", str(scenario), "--calibration", str(path)))
        yield Case("inspect path", name, ("inspect", str(path)), 2)
    tf = _write(root, "files/trace-zero.toml", dump_toml(big_trace))
    yield Case("scenario file", "trace_file=/dev/zero", ("simulate", "--scenario", str(tf)), 2, "trace")


def output_cases(root: Path) -> Iterator[Case]:
    scenario = _write(root, "out/scenario.toml", dump_toml(small_advise_scenario()))
    sim = _write(root, "out/sim.toml", dump_toml(small_sim_scenario()))
    a_file = _write(root, "out/a-file", "x")
    readonly = root / "out/readonly"
    readonly.mkdir(parents=True, exist_ok=True)
    readonly.chmod(0o500)
    adv = ("advise", "--scenario", str(scenario), "--processes", "1")
    yield Case("output path", "--report into a directory", (*adv, "--report", str(root)), 2, "is a directory")
    yield Case("output path", "--report in a missing dir (made)", (*adv, "--report", str(root / "new/r.html")), 0)
    yield Case("output path", "--report under a file", (*adv, "--report", str(a_file / "r.html")), 2)
    yield Case("output path", "--write-launch into a directory", (*adv, "--write-launch", str(root)), None)
    smp = ("simulate", "--scenario", str(sim), "--processes", "1")
    yield Case("output path", "--plot onto a file", (*smp, "--plot", str(a_file)), 2, "is a file, not a directory")
    yield Case("output path", "--plot under a file", (*smp, "--plot", str(a_file / "plots")), 2)
    if not _is_root():
        yield Case("output path", "--report read-only", (*adv, "--report", str(readonly / "r.html")), 2)


def _is_root() -> bool:
    import os

    return os.geteuid() == 0


FLAG_CASES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--reserve-gib", "inf"), "finite"),
    (("plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--reserve-gib", "nan"), "finite"),
    (("plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--tp", "1e9"), "positive integer"),
    (("plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--tp", "100000"), ""),
    (("plan-memory", "--target", "Qwen/Qwen3-8B", "--gpu", "H100", "--max-model-len", "99999999999"), ""),
    (("plan-memory", "--target", "x" * 5000, "--gpu", "H100"), ""),
    (("plan-memory", "--target", "Qwen/Qwen3-8B\x00", "--gpu", "H100"), ""),
    (("bench", "--url", "http://[::1", "--model", "m"), "not a valid URL"),
    (("bench", "--url", "http://127.0.0.1:65536", "--model", "m"), "Port"),
    (("bench", "--url", "http://127.0.0.1:8000", "--model", "m", "--seed", "-1"), "0..2**63-1"),
    (("bench", "--url", "http://127.0.0.1:8000", "--model", "m", "--rates", "inf"), ""),
    (("bench", "--url", "http://127.0.0.1:8000", "--model", "m", "--rates", "nan"), ""),
    (("bench", "--url", "http://127.0.0.1:8000", "--model", "m", "--concurrency", "0"), ""),
    (("bench", "--url", "http://127.0.0.1:8000", "--model", "m", "--max-tokens", "-5"), ""),
    (("bench", "--url", "http://127.0.0.1:8000", "--model", "m", "--prompts", "/dev/zero"), ""),
    (("monitor", "--url", "http://[::1"), "not a valid URL"),
    (("monitor", "--url", "http://127.0.0.1:8000", "--interval", "inf"), "finite"),
    (("monitor", "--url", "http://127.0.0.1:8000", "--interval", "0"), ""),
    (("profile", "--target", "x", "--k", "1-3000000000"), ""),
    (("profile", "--target", "x", "--k", "0"), ""),
    (("profile", "--target", "x", "--temperatures", "nan"), ""),
    (("simulate", "--scenario", str(SIM_EXAMPLE), "--processes", "5000", "--num-requests", "20"), "OK"),
    (("simulate", "--scenario", str(SIM_EXAMPLE), "--num-requests", "1000000000000"), ""),
    (("advise", "--scenario", str(ADVISE_EXAMPLE), "--processes", "5000", "--json"), "OK"),
    (("speedup", "--alpha", "inf", "--k", "4"), ""),
    (("speedup", "--alpha", "1.5", "--k", "4"), ""),
    (("speedup", "--alpha", "0.5", "--k", "100000000"), ""),
    (("validate", "--family", "no-such-family"), ""),
    (("validate", "--predictor", "nope"), ""),
    (("check-pair", "--target", "Qwen/Qwen3-8B", "--draft", "/dev/null"), ""),
)


def flag_cases() -> Iterator[Case]:
    """Flags; "OK" marks a legal extreme that must work (``--processes`` is capped by the cells and cores)."""
    for argv, fragment in FLAG_CASES:
        if fragment == "OK":
            yield Case("flags", " ".join(a[:40] for a in argv), argv, 0)
        else:
            yield Case("flags", " ".join(a[:40] for a in argv[:6]), argv, 2, fragment or None)


def all_cases(root: Path) -> list[Case]:
    out: list[Case] = []
    for gen in (scenario_cases, advise_cases, evidence_cases, config_cases, file_cases, output_cases):
        out.extend(gen(root))
    out.extend(flag_cases())
    return out


def _finite(x: float) -> bool:
    return math.isfinite(x)
