from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sessions_app.services.api_keys import api_key_create, tenant_get_or_create


class Command(BaseCommand):
    help = "Create an API key for a tenant (the tenant too, if new) and print it once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="Tenant name.")
        parser.add_argument("--name", default="", help="A label for the key.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_get_or_create(name=options["tenant"])
        issued = api_key_create(tenant=tenant, name=options["name"])
        self.stdout.write(issued.secret)
        self.stderr.write(f"Key for tenant '{tenant.name}'. It is shown once; store it now.")
