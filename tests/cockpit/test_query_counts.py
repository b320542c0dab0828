"""Each cockpit page costs a bounded number of queries, the same on a small world and
on a database grown with the bench generator: nothing loops over rows with a query.

Size (bench.generate, seed 1): 2 tenants x 150 sessions x 10 turns x 3 steps (9,000
steps, 3,000 turns, 300 sessions, 1,500 fetched items, 600 cart lines) and 3,000
memories (300 distinct texts embedded for real) over 40 users, plus `seed_world`. The
bench's short B3 size is 1.02M steps; rendering cost here is what must not grow with
it, and page queries are index-bound (see the selectors), so a test-sized database
shows the same counts."""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analytics_app.services.rollups import rollups_fill
from bench.generate_cli import main as generate_main
from memory_app.models import Memory
from sessions_app.models import ChatSession, Tenant
from tests.cockpit.seed import World, seed_world

pytestmark = pytest.mark.django_db

# Queries per page on the seeded world: user 10, session 30 (most of it the context
# assembly: items, turns, summaries, the hybrid search and its signals, the recalled
# turns, the BM25 term statistics, the hits' relations and related memories, failures;
# each one query per page whatever the data), explorer 5-6, search 12, memory 6-7,
# spend 29 (the rollups plus the live tail after the rollup markers, so the figures are
# exact); the bounds leave room for a session/auth query or two.
BOUNDS = {"user": 12, "session": 32, "explorer": 8, "search": 14, "memory": 9, "spend": 32}

BENCH = [
    "--tenants=2",
    "--sessions=150",
    "--turns-per-session=10",
    "--steps-per-turn=3",
    "--components=5",
    "--selections=2",
    "--memories=3000",
    "--memory-texts=300",
    "--memory-users=20",
]


def urls(world: World) -> dict[str, str]:
    explorer = reverse("cockpit-memories")
    return {
        "user": reverse("cockpit-user", args=[world.tenant_id, world.user_id]),
        "session": reverse("cockpit-session", args=[world.costly_id])
        + "?query=which+screen+finish",
        "explorer": f"{explorer}?tenant={world.tenant_id}",
        "search": f"{explorer}?tenant={world.tenant_id}&q=reflective+display+finish",
        "memory": reverse("cockpit-memory", args=[world.matte_id]),
        "spend": reverse("dashboard-spend"),
    }


def bench_urls() -> dict[str, str]:
    tenant = Tenant.objects.filter(name__startswith="bench-1-").order_by("pk").first()
    assert tenant is not None
    session = ChatSession.objects.filter(tenant=tenant).order_by("-total_cost_usd").first()
    memory = Memory.objects.filter(tenant=tenant).order_by("-created_at").first()
    assert session is not None and memory is not None
    explorer = reverse("cockpit-memories")
    return {
        "user": reverse("cockpit-user", args=[tenant.pk, memory.user_id]),
        "session": reverse("cockpit-session", args=[session.pk]) + "?query=laptop+budget",
        "explorer": f"{explorer}?tenant={tenant.pk}&decay_below=1.01&page=3",
        "search": f"{explorer}?tenant={tenant.pk}&q=what+does+the+user+like",
        "memory": reverse("cockpit-memory", args=[memory.pk]),
    }


def count(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(queries)


def test_every_page_has_a_bounded_query_count_that_does_not_grow_with_the_data(
    django_assert_max_num_queries: Callable[..., object],
) -> None:
    world = seed_world()
    client = Client()
    client.force_login(get_user_model().objects.get(username="ops"))
    for url in urls(world).values():  # warm caches (embedder, prices, content types)
        client.get(url)
    small = {name: count(client, url) for name, url in urls(world).items()}

    generate_main(BENCH, stdout=StringIO(), stderr=StringIO())
    rollups_fill()
    grown = {name: count(client, url) for name, url in urls(world).items()}
    on_bench = {name: count(client, url) for name, url in bench_urls().items()}
    print(f"queries per page: small {small}, grown {grown}, bench rows {on_bench}")

    assert grown == small  # the same pages cost the same after ~10x more rows
    for name, url in [*urls(world).items(), *bench_urls().items()]:
        with django_assert_max_num_queries(BOUNDS[name]):  # type: ignore[operator]
            client.get(url)
