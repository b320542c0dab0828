"""`python -m bench.generate_cli`: synthetic tenants, sessions, turns, steps and long-term
memories for benchmarks, in the database of DJANGO_SETTINGS_MODULE (default
`config.settings.local`, i.e. DATABASE_URL or the embedded server).

A bench entry point, not a management command: no app imports `bench`. Thin: the logic
(deterministic, idempotent, resumable, SQL-side) is in `bench.generate`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO

DEFAULT_COMPONENTS = 10
DEFAULT_SELECTIONS = 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.generate_cli",
        description="Generate benchmark data; run it again to resume or to check that "
        "nothing is missing.",
    )
    parser.add_argument("--tenants", type=int, default=1)
    parser.add_argument("--sessions", type=int, default=100, help="Per tenant.")
    parser.add_argument("--turns-per-session", type=int, default=10)
    parser.add_argument("--steps-per-turn", type=int, default=3)
    parser.add_argument(
        "--components",
        type=int,
        nargs="?",
        const=DEFAULT_COMPONENTS,
        default=0,
        help=f"Fetched items per session ({DEFAULT_COMPONENTS} if given without a number).",
    )
    parser.add_argument(
        "--selections",
        type=int,
        nargs="?",
        const=DEFAULT_SELECTIONS,
        default=0,
        help=f"Cart lines per session ({DEFAULT_SELECTIONS} if given without a number); "
        "taken from the components, so at most --components.",
    )
    parser.add_argument("--seed", type=int, default=1, help="Names and ids derive from it.")
    parser.add_argument("--chunk-sessions", type=int, default=200)
    parser.add_argument("--memories", type=int, default=0, help="In total, over the tenants.")
    parser.add_argument(
        "--memory-texts",
        type=int,
        default=2000,
        help="Distinct texts embedded with the real model; further memories reuse their "
        "vectors with a small perturbation.",
    )
    parser.add_argument("--memory-users", type=int, default=1000, help="Per tenant.")

    return parser


def main(argv: Sequence[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run the generator with command-line arguments; Django must be set up."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    from bench.generate import GenerateSpec, generate

    options = vars(build_parser().parse_args(list(argv)))
    spec = GenerateSpec(
        tenants=options["tenants"],
        sessions=options["sessions"],
        turns_per_session=options["turns_per_session"],
        steps_per_turn=options["steps_per_turn"],
        components=options["components"],
        selections=options["selections"],
        seed=options["seed"],
        chunk_sessions=options["chunk_sessions"],
        memories=options["memories"],
        memory_texts=options["memory_texts"],
        memory_users=options["memory_users"],
    )
    for result in generate(spec, progress=lambda line: print(line, file=stderr)):
        counts = ", ".join(f"{table} +{n:,}" for table, n in result.inserted.items())
        print(f"{result.name}: {counts or 'nothing to do'}", file=stdout)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    sys.exit(main(sys.argv[1:]))
