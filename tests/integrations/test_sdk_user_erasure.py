"""The SDK erases a user whose id holds "/" over a live server: the id travels as one
percent-encoded path segment."""

from __future__ import annotations

from typing import Any

import engram
import pytest

from sessions_app.services.api_keys import IssuedKey


def test_erase_user_with_a_slash_in_the_id(live_server: Any, live_key: IssuedKey) -> None:
    with engram.Engram(live_server.url, live_key.secret) as client:
        alice = client.create_session(user_id="team/alice", agent_id="shop")
        team = client.create_session(user_id="team", agent_id="shop")
        answer = client.erase_user("team/alice")
        assert answer["user_id"] == "team/alice" and answer["deleted"]["sessions"] == 1
        with pytest.raises(engram.NotFound):
            alice.get()
        assert team.get()["user_id"] == "team"
