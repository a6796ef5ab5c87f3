"""A bench run's configuration (what the results database keeps, so ``--resume`` sends exactly the same
requests) and the plan it expands to: levels of rates or concurrencies, each with its requests."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from specwise.errors import SpecwiseError, redact_url
from specwise.latency import LevelSummary
from specwise.loadgen.client import ClientConfig, api_key_from
from specwise.loadgen.runner import BenchPlan, LevelPlan
from specwise.loadgen.workload import PromptItem, level_requests
from specwise.methods import METHOD_NAMES, row_name
from specwise.traffic import Arrivals
from specwise.values import (
    ValueRefusal,
    bounded,
    http_url,
    non_negative_float,
    positive_float,
    positive_int,
    seed_int,
)

SECRET_FLAGS = ("--api-key",)  # a server's flags whose value is a credential


def server_flag(arg: str) -> tuple[str, str | None]:
    """``--api_key=K`` -> ``("--api-key", "K")``: a server argument as vLLM's parser reads it (``_`` and ``-``
    alike in a flag's name), and its ``=`` value (None: the value, if any, is the next argument)."""
    name, eq, value = arg.partition("=")
    if not name.startswith("--"):
        return arg, None
    return "--" + name[2:].replace("_", "-"), value if eq else None


def masked_secret_args(argv: tuple[str, ...]) -> list[str]:
    """``argv`` with the value of each credential flag (``--api-key K`` or ``--api-key=K``) replaced by ``***``:
    what may be stored with a run. Launch files refuse such flags; this guards server arguments built otherwise."""
    out: list[str] = []
    for i, a in enumerate(argv):
        flag, inline = server_flag(a)
        before = server_flag(argv[i - 1]) if i > 0 else ("", None)
        if flag in SECRET_FLAGS and inline is not None:
            out.append(f"{a.split('=', 1)[0]}=***")
        elif before[0] in SECRET_FLAGS and before[1] is None:
            out.append("***")
        else:
            out.append(a)
    return out


@dataclass(frozen=True)
class LaunchInfo:
    """The server configuration a ``--launch`` run started (kept with the run for calibration)."""

    name: str
    speculative_config: dict[str, Any] | None
    server_args: tuple[str, ...] = ()
    model: str | None = None  # what the server loaded
    engine: str = "vllm"
    engine_version: str | None = None
    hardware: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "speculative_config": self.speculative_config,
            "server_args": masked_secret_args(self.server_args),
            "model": self.model,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "hardware": self.hardware,
        }


RENAMED_FIELDS = {"timeout": "request_timeout_s", "slo_ttft": "slo_ttft_s", "slo_tpot": "slo_tpot_s"}
""":class:`RunConfig` fields renamed to say their unit (old name: new name): a run stored before reads back, and
the API's ``specwise.bench`` still takes the old keywords (with a ``DeprecationWarning``)."""


@dataclass(frozen=True)
class RunConfig:
    url: str
    model: str
    prompts: tuple[PromptItem, ...]
    endpoint: str = "completions"
    rates: tuple[float, ...] = (1.0, 4.0)
    concurrency: tuple[int, ...] | None = None
    sweep: int | None = None
    sweep_rates: tuple[float, ...] | None = None  # found by the sweep's probes, kept for --resume
    requests_per_level: int = 20
    arrivals: str = "poisson"
    cv: float = 1.0
    max_tokens: int = 64
    temperature: float = 0.0
    ignore_eos: bool = False
    max_concurrency: int = 256
    request_timeout_s: float = 120.0
    metrics_urls: tuple[str, ...] = ()  # one per replica (a fleet); () when not scraping
    api_key_env: str = "OPENAI_API_KEY"
    # whether the run sent a key (its variable was set when it started; the key itself is never stored): a resume
    # without it would store every 401 as the run's result (review s59)
    api_key_sent: bool = False
    seed: int = 0
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    launch: LaunchInfo | None = field(default=None)
    # a run against a server: the speculative config it runs, as said by --speculative-config (None: not said)
    speculative_config: dict[str, Any] | None = None

    def redacted(self) -> RunConfig:
        """What may be stored or printed: URLs without their ``user:password@``."""
        metrics = tuple(redact_url(u) for u in self.metrics_urls)
        return replace(self, url=redact_url(self.url), metrics_urls=metrics)

    def sent_temperatures(self) -> tuple[float, ...]:
        """The sampling temperatures the run's requests carry, sorted: a prompt's own, else ``temperature``
        (request i of a level sends prompt i, cycled: :func:`~specwise.loadgen.workload.level_requests`)."""
        sent = self.prompts[: self.requests_per_level]
        return tuple(sorted({p.temperature if p.temperature is not None else self.temperature for p in sent}))

    @property
    def credentials_dropped(self) -> bool:
        return any("***@" in u for u in (self.url, *self.metrics_urls))

    def with_launch(self, url: str, model: str, launch: LaunchInfo) -> RunConfig:
        metrics = (url.rstrip("/") + "/metrics",) if self.metrics_urls else ()
        return replace(self, url=url, model=model, launch=launch, metrics_urls=metrics)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["prompts"] = [p.to_json() for p in self.prompts]
        out["metrics_urls"] = list(self.metrics_urls)
        out["launch"] = self.launch.to_json() if self.launch else None
        if out["launch"] is None:
            del out["launch"]
        if self.sweep_rates is None:
            del out["sweep_rates"]
        if self.speculative_config is None:
            del out["speculative_config"]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunConfig:
        try:
            d = {"url": "", "model": "", **data}
            d["prompts"] = tuple(PromptItem.from_json(p) for p in d.get("prompts", ()))
            for old_key, key in RENAMED_FIELDS.items():  # stored before the fields said their unit
                if old_key in d:
                    d.setdefault(key, d.pop(old_key))
            old = d.pop("metrics_url", None)  # stored before fleets: one URL or null
            d.setdefault("metrics_urls", () if old is None else (old,))
            for key in ("rates", "concurrency", "sweep_rates", "metrics_urls"):
                if d.get(key) is not None:
                    d[key] = tuple(d[key])
            launch = d.pop("launch", None)
            if launch is not None:
                d["launch"] = LaunchInfo(
                    launch["name"],
                    launch.get("speculative_config"),
                    tuple(launch.get("server_args", ())),
                    launch.get("model"),
                    launch.get("engine", "vllm"),
                    launch.get("engine_version"),
                    launch.get("hardware"),
                )
            return cls(**d)
        except (KeyError, TypeError) as exc:
            raise SpecwiseError(f"stored run configuration is unreadable ({exc}); start a new run") from None


def refuse_level_conflicts(
    spell: Callable[[str, str | None], str],
    *,
    rates: object,
    concurrency: object,
    sweep: object,
    arrivals: str | None,
    cv: object,
) -> None:
    """Settings of a run of which one would be dropped without a word, refused before any request: the levels are
    ``rates``, ``concurrency`` or ``sweep`` (one of them); an arrival process paces open-loop levels only, and only
    gamma arrivals have a ``cv``. The keywords are the settings the caller gave (None: not given), under
    :class:`RunConfig`'s names; ``spell(name, value)`` writes one as the caller's interface does (``--burstiness-cv``
    and ``--arrivals gamma`` for ``specwise bench``; ``cv`` and ``arrivals='gamma'`` for ``specwise.bench()``)."""
    given = {"rates": rates, "concurrency": concurrency, "sweep": sweep, "arrivals": arrivals, "cv": cv}
    shapes = [name for name in ("rates", "concurrency", "sweep") if given[name] is not None]
    if len(shapes) > 1:
        rates, concurrency, sweep = (spell(name, None) for name in ("rates", "concurrency", "sweep"))
        raise SpecwiseError(
            f"{spell(shapes[0], None)}: not with {spell(shapes[1], None)}; each sets the levels ({rates}: request"
            f" rates, {concurrency}: requests kept in flight, {sweep}: two probes, then rates spread between them):"
            " give one"
        )
    if cv is not None and arrivals != "gamma":
        if arrivals is None:
            raise SpecwiseError(
                f"{spell('cv', None)}: only with {spell('arrivals', 'gamma')} (the default, poisson, has no CV to set);"
                f" add {spell('arrivals', 'gamma')} or drop {spell('cv', None)}"
            )
        raise SpecwiseError(
            f"{spell('cv', None)}: not with {spell('arrivals', str(arrivals))} (only gamma arrivals have a CV)"
        )
    paced = [name for name in ("arrivals", "cv") if given[name] is not None]
    if paced and concurrency is not None:
        raise SpecwiseError(
            f"{spell(paced[0], None)}: not with {spell('concurrency', None)}, whose closed-loop levels send a request"
            f" as one finishes (no arrival process); drop {spell(paced[0], None)}, or give {spell('rates', None)}"
        )


def client_config(c: RunConfig) -> ClientConfig:
    """How the run's requests reach its server (URL, model, endpoint, key variable, timeout)."""
    return ClientConfig(
        base_url=c.url,
        model=c.model,
        endpoint="chat" if c.endpoint == "chat" else "completions",
        api_key_env=c.api_key_env,
        # no separate read timeout: a loaded server may queue a long prompt for most of --request-timeout before
        # its first byte, and a hidden shorter limit would fail it while the hint says to raise --request-timeout
        request_timeout_s=c.request_timeout_s,
    )


def plan_steps(c: RunConfig) -> list[tuple[float | None, int | None]]:
    """Each level's (request rate, concurrency), in level order (a sweep's rates once its probes have run)."""
    steps: list[tuple[float | None, int | None]]
    if c.sweep:
        # guidellm-style: a synchronous probe, a throughput probe, then rates spread between the two.
        steps = [(None, 1), (None, min(c.max_concurrency, c.requests_per_level))]
        steps += [(rate, None) for rate in c.sweep_rates or ()]
    elif c.concurrency:
        steps = [(None, n) for n in c.concurrency]
    else:
        steps = [(rate, None) for rate in c.rates]
    return steps


def plan_from_config(c: RunConfig) -> BenchPlan:
    steps = plan_steps(c)
    prompts = list(c.prompts)
    levels = tuple(
        LevelPlan(
            i,
            rate,
            tuple(level_requests(prompts, i, c.requests_per_level, c.max_tokens, c.temperature, c.ignore_eos)),
            conc,
        )
        for i, (rate, conc) in enumerate(steps)
    )
    return BenchPlan(
        client=client_config(c),
        levels=levels,
        arrivals=Arrivals(c.arrivals, 1.0, c.cv),  # type: ignore[arg-type]
        seed=c.seed,
        max_concurrency=c.max_concurrency,
        metrics_urls=c.metrics_urls,
        slo_ttft_s=c.slo_ttft_s,
        slo_tpot_s=c.slo_tpot_s,
    )


def sweep_rates(sync: LevelSummary, throughput: LevelSummary, count: int) -> tuple[float, ...]:
    """``count`` rates spread evenly between the synchronous and the throughput probes' request rates."""
    low, high = sync.request_rate_per_s, throughput.request_rate_per_s
    if not low > 0 or not high > 0:
        failed = sync.failed + throughput.failed
        raise SpecwiseError(
            f"sweep: a probe completed no request ({failed} failed: {dict(sync.errors) or dict(throughput.errors)}); "
            "check the server"
        )
    high = max(high, low * 1.01)
    exact = [low + (high - low) * (i + 1) / (count + 1) for i in range(count)]
    for digits in range(3, 16):  # the fewest significant digits (3 at least) that keep them apart and inside
        rounded = [float(f"{x:.{digits}g}") for x in exact]
        if all(a < b for a, b in zip([low, *rounded], [*rounded, high], strict=True)):
            return tuple(rounded)
    return tuple(exact)


def _rates(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueRefusal(f"expected comma-separated request rates, got {text!r}") from None
    if not values or any(not v > 0 or v == float("inf") for v in values):
        raise ValueRefusal(f"rates must be > 0 (and finite), got {text!r}")
    return values


def _concurrency(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueRefusal(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise ValueRefusal(f"concurrency levels must be >= 1, got {text!r}")
    return values


MAX_SWEEP = 100  # rates a --sweep spreads between its probes; more is a typo, not a measurement plan


_sweep = bounded(int, f"a number of rates from 1 to {MAX_SWEEP}", low=1, high=MAX_SWEEP)


def _base_url(text: str) -> str:
    """The server's base URL: requests go to URL/v1/completions, so a URL ending in /v1 (the OpenAI SDK's
    ``base_url`` habit) would send them to /v1/v1/... and get 404s."""
    url = http_url(text)
    if url.rstrip("/").endswith("/v1"):
        fixed = redact_url(url.rstrip("/").removesuffix("/v1"))
        raise ValueRefusal(f"give the server's base URL without /v1 (requests go to URL/v1/completions): {fixed}")
    return url


def _server_speculation(value: object) -> dict[str, Any]:
    """What the benched server runs, as its ``--speculative-config``: that JSON (text, or an object from the API),
    an object with a string ``method`` (vLLM's method name: ``{"method": "ngram", "num_speculative_tokens": 4}``), one
    of :data:`~specwise.methods.METHOD_NAMES`, as a scenario's. ``advise --bench`` matches the run to a candidate by
    it: a method specwise does not know would match none."""
    spec = value
    if isinstance(value, str):
        try:
            spec = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueRefusal(f"expected the JSON of vllm serve --speculative-config ({exc.msg})") from None
    if isinstance(spec, dict) and "method" not in spec and isinstance(spec.get("model"), str):
        example = json.dumps({"method": "draft_model", "model": spec["model"]})
        raise ValueRefusal(
            "no 'method': vLLM guesses it from the draft's name, a guess that changed between releases; give the "
            f"method the server runs, by which advise --bench matches runs (e.g. '{example[:-1]}, ...}}')"
        )
    if not isinstance(spec, dict) or not isinstance(spec.get("method"), str) or not spec["method"]:
        raise ValueRefusal(
            "expected the JSON of vllm serve --speculative-config, an object with a 'method' "
            """(e.g. '{"method": "ngram", "num_speculative_tokens": 4}')"""
        )
    if row_name(spec["method"]) not in METHOD_NAMES:
        raise ValueRefusal(
            f"unknown speculative method {spec['method']!r} (known: {', '.join(METHOD_NAMES)}); a server running "
            "another method can be benched without --speculative-config (its /metrics still give the acceptance)"
        )
    return dict(spec)


def key_variable(name: str) -> str:
    """The variable a run reads its API key from, named by the user (``bench --api-key-env``, the API's
    ``api_key_env``): one that is unset or empty is refused before any request. The user meant to send a key, and
    without it the run measures only 401s -- or, on a server without auth, passes unnoticed. Only the default
    (``$OPENAI_API_KEY``, which nobody named) may be absent, for a server without auth; ``''`` sends no key."""
    if name and api_key_from(name) is None:
        raise ValueRefusal(f"${name} is not set (or empty); export it, or give '' to send no key")
    return name


CHECKS: dict[str, Callable[[str], Any]] = {
    "url": _base_url,
    "rates": _rates,
    "concurrency": _concurrency,
    "sweep": _sweep,
    "requests_per_level": positive_int,
    "cv": positive_float,
    "max_tokens": positive_int,
    "temperature": non_negative_float,
    "max_concurrency": positive_int,
    "request_timeout_s": positive_float,
    "metrics_urls": http_url,
    "seed": seed_int,
    "slo_ttft_s": positive_float,
    "slo_tpot_s": positive_float,
    "speculative_config": _server_speculation,
    "api_key_env": key_variable,
}
"""Each :class:`RunConfig` field's check of its text (a list: comma-separated), by field: ``specwise bench``'s
flags and the API's arguments (:class:`~specwise.values.ValueRefusal` on a bad one)."""
