"""`python manage.py mcp_serve --api-key KEY`: Engram's MCP server over stdio, for MCP
clients that launch their servers as a subprocess (Claude Desktop, IDEs)."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError, CommandParser

from integrations.auth import tenant_for_secret
from integrations.mcp_server import build_server


class Command(BaseCommand):
    help = "Serve Engram's MCP tools over stdio for the tenant of an API key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--api-key",
            default=os.environ.get("ENGRAM_API_KEY", ""),
            help="The tenant's API key (default: $ENGRAM_API_KEY).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_for_secret(options["api_key"])
        if tenant is None:
            raise CommandError("A valid --api-key (or ENGRAM_API_KEY) is required.")
        # stdout carries the protocol: every log line goes to stderr.
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, force=True)
        anyio.run(build_server(tenant).run_stdio_async)
