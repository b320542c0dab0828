"""The cockpit tests' world (`seed_world`) and its staff user's logged-in client."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.cockpit.seed import World, seed_world


@pytest.fixture
def world() -> World:
    return seed_world()


@pytest.fixture
def staff() -> Client:
    """The client of seed_world's staff user "ops" (needs `world`)."""
    client = Client()
    client.force_login(get_user_model().objects.get(username="ops"))
    return client
