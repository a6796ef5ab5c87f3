"""The k-by-batch-size schedule per vLLM version, against the real vLLM 0.32 (slow): the current form validates
with vLLM's own SpeculativeConfig and keeps the schedule; the 0.8-0.9 form's ``disable_by_batch_size`` is the key
0.32 no longer has (why specwise writes it only for those versions)."""

from __future__ import annotations

import json
import subprocess

import pytest

from specwise.engines import Speculation, get_engine
from specwise.methods import get_method
from tests.integration.engine import PYTHON, require_engine

pytestmark = [pytest.mark.slow, pytest.mark.integration]

_VALIDATE = """
import json, sys
import vllm
from vllm.config import SpeculativeConfig
for cfg in json.load(sys.stdin):
    try:
        c = SpeculativeConfig(**cfg)
        print(json.dumps({"version": vllm.__version__, "k": c.num_speculative_tokens,
                          "schedule": c.num_speculative_tokens_per_batch_size}))
    except Exception as exc:
        print(json.dumps({"version": vllm.__version__, "error": str(exc)}))
"""


def test_each_versions_config_against_vllm_0_32() -> None:
    require_engine()
    spec = Speculation(get_method("ngram"), 2, prompt_lookup=(2, 4), schedule=((1, 34, 4), (35, 256, 0)))
    configs = [get_engine("vllm", v).speculative_config(spec) for v in (None, "0.32", "0.20", "0.9")]
    proc = subprocess.run(
        [str(PYTHON), "-c", _VALIDATE], input=json.dumps(configs), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    current, v032, v020, v09 = (json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{"))
    assert current["version"].startswith("0.32")
    assert current == v032 and current["schedule"] == [[1, 34, 4], [35, 256, 0]] and current["k"] == 4
    assert v020 == {"version": current["version"], "k": 2, "schedule": None}
    assert "disable_by_batch_size" in v09["error"]


def test_the_vocabulary_option_check_pair_names_is_vllm_0_32s() -> None:
    """check-pair offers ``use_heterogeneous_vocab`` for a draft whose vocabulary differs: the real 0.32
    SpeculativeConfig has the field (default off) and, as the finding says, takes it only with method draft_model."""
    require_engine()
    probe = (
        "from vllm.config import SpeculativeConfig as S\n"
        "f = S.__dataclass_fields__['use_heterogeneous_vocab']\n"
        "print(f.default)\n"
        "try:\n"
        "    S(method='ngram', num_speculative_tokens=2, prompt_lookup_max=2, use_heterogeneous_vocab=True)\n"
        "    print('accepted')\n"
        "except Exception as exc:\n"
        "    print('refused:', ' '.join(str(exc).split()))\n"
    )
    proc = subprocess.run([str(PYTHON), "-c", probe], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    default, verdict = proc.stdout.strip().splitlines()[-2:]
    assert default == "False"
    assert verdict.startswith("refused:") and "only works with method='draft_model'" in verdict
