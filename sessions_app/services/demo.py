"""Demo data for `make run`: a tenant, an admin, a key; other apps add theirs through the
`demo_loaded` hook. Loaded once: a second run finds the demo tenant and does nothing."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from sessions_app.hooks import demo_loaded
from sessions_app.models import Tenant
from sessions_app.services.api_keys import api_key_create
from sessions_app.services.demo_shopping import demo_shopping_load
from sessions_app.services.demo_spend import demo_spend_load

DEMO_TENANT = "demo"


@dataclass(frozen=True)
class DemoCredentials:
    username: str
    password: str
    api_key: str


def demo_load(*, admin_username: str, admin_password: str = "") -> DemoCredentials | None:
    """Creates the demo once; None if it was there already."""
    if Tenant.objects.filter(name=DEMO_TENANT).exists():
        return None
    password = admin_password or secrets.token_urlsafe(12)
    with transaction.atomic():
        tenant = Tenant.objects.create(name=DEMO_TENANT)
        user_model = get_user_model()
        admin_user = user_model.objects.filter(username=admin_username).first()
        if admin_user is None:
            admin_user = user_model.objects.create_superuser(
                username=admin_username, email="", password=password
            )
        else:
            admin_user.set_password(password)
            admin_user.is_staff = admin_user.is_superuser = True
            admin_user.save(update_fields=["password", "is_staff", "is_superuser"])
        issued = api_key_create(tenant=tenant, name="demo")
        demo_spend_load(tenant=tenant)
        demo_shopping_load(tenant=tenant)
        demo_loaded.send(sender=Tenant, tenant=tenant)
    return DemoCredentials(username=admin_username, password=password, api_key=issued.secret)
