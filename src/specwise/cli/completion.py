"""``specwise completion bash|zsh|fish``: print a shell completion script made from this parser."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from specwise.cli.common import EXIT_OK
from specwise.cli.completion_scripts import SCRIPTS


def register(sub: Any) -> None:
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, fish)",
        description="Print a completion script for SHELL: command names, each command's options and the values of "
        "options with fixed choices (and the GPU catalog for --gpu, the examples for 'examples NAME'), generated "
        "from specwise's own argument parser. bash: "
        'eval "$(specwise completion bash)" in ~/.bashrc; zsh: the same in ~/.zshrc (after compinit); fish: '
        "specwise completion fish > ~/.config/fish/completions/specwise.fish",
    )
    p.add_argument("shell", choices=sorted(SCRIPTS), help="the shell")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from specwise.cli import build_parser  # the whole tree, this command included

    sys.stdout.write(SCRIPTS[args.shell](build_parser()))
    return EXIT_OK
