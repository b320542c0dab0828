"""`manage.py bench_generate`: synthetic tenants, sessions, turns, steps and long-term
memories for benchmarks.

Thin: the logic (deterministic, idempotent, resumable, SQL-side) is in `bench.generate`.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from bench.generate import GenerateSpec, generate

DEFAULT_COMPONENTS = 10
DEFAULT_SELECTIONS = 3


class Command(BaseCommand):
    help = "Generate benchmark data; run it again to resume or to check that nothing is missing."

    def add_arguments(self, parser: CommandParser) -> None:
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

    def handle(self, *args: Any, **options: Any) -> None:
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
        for result in generate(spec, progress=lambda line: self.stderr.write(line)):
            counts = ", ".join(f"{table} +{n:,}" for table, n in result.inserted.items())
            self.stdout.write(f"{result.name}: {counts or 'nothing to do'}")
