"""Engram's Python client: sessions, turns with LLM spend, workspace, memories, usage.

client = engram.Engram()              # ENGRAM_URL / ENGRAM_API_KEY
session = client.create_session(user_id="maria", agent_id="shop")
with session.turn(user_message="hi") as turn:
    turn.track(openai_response)
"""

from engram._client import AsyncEngram, Engram
from engram._errors import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    BudgetExceeded,
    Conflict,
    EngramError,
    IdempotencyKeyReused,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    PreconditionFailed,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    SessionExpired,
    Unresolved,
)
from engram._providers import wrap_anthropic, wrap_openai
from engram._responses import step_from_response
from engram._session import AsyncSession, Session
from engram._tracking import StepTimer, Turn

__all__ = [
    "APIConnectionError",
    "APIError",
    "AsyncEngram",
    "AsyncSession",
    "AuthenticationError",
    "BudgetExceeded",
    "Conflict",
    "Engram",
    "EngramError",
    "IdempotencyKeyReused",
    "InvalidRequest",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "PreconditionFailed",
    "RateLimited",
    "ServerError",
    "ServiceUnavailable",
    "Session",
    "SessionExpired",
    "StepTimer",
    "Turn",
    "Unresolved",
    "step_from_response",
    "wrap_anthropic",
    "wrap_openai",
]
__version__ = "0.1.0"
