"""What a test does when a system dependency is absent: skip it on a developer's machine, fail it where the Makefile
(CI) promises the dependency by setting ``env`` to 1 (SPECWISE_REQUIRE_VLLM for the vLLM CPU build and its
models, SPECWISE_REQUIRE_SYSTEM_DEPS for Chromium, Prometheus, promtool and Ray)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

SYSTEM_DEPS = "SPECWISE_REQUIRE_SYSTEM_DEPS"
VLLM = "SPECWISE_REQUIRE_VLLM"


def missing_dependency(message: str, env: str = SYSTEM_DEPS) -> NoReturn:
    if os.environ.get(env) == "1":
        pytest.fail(f"{message} ({env}=1)")
    pytest.skip(message)
