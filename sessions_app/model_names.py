"""Model names as agents report them, and the name of the model they route to.

Gateways put a routing prefix before the provider's own model name: LiteLLM
(`openai/gpt-4o-mini`, `vertex_ai/gemini-1.5-pro`, `openrouter/openai/gpt-4o`) and
OpenRouter (`anthropic/claude-3.5-sonnet`, `x-ai/grok-2`). Pricing
(`analytics_app.pricing`) prices such a name as the provider's own, and model budgets
(`sessions_app.services.spend_budgets`) count it under the provider's own name; both
read names through `without_provider_prefix`, so a step priced as gpt-4o-mini is spent
under a gpt-4o-mini budget. It lives here, at the bottom layer, because budgets are
sessions_app's and sessions_app imports no other local app.
"""

from __future__ import annotations

import re

# Only these are stripped: an unknown `org/model` (a Hugging Face id) names a model of
# its own, not a route. Model budgets store their model as its `model_key`, so a change
# to these rules needs a migration that re-keys the stored budgets, as sessions_app's
# 0004_spend_budget_model_keys does.
PROVIDER_PREFIXES = frozenset(
    {
        "openai", "anthropic", "google", "gemini", "vertex_ai", "vertex_ai_beta", "azure",
        "azure_ai", "mistral", "mistralai", "deepseek", "x-ai", "xai", "cohere", "cohere_chat",
        "openrouter", "text-completion-openai",
    }
)  # fmt: skip


def without_provider_prefix(name: str) -> str:
    """`name` (lower case) without its leading known routing prefixes, or `name` itself."""
    while "/" in name:
        head, rest = name.split("/", 1)
        if head not in PROVIDER_PREFIXES or not rest:
            break
        name = rest
    return name


# A release date at the end of a provider's name: a snapshot of the model the name
# without it stands for (`gpt-4o-2024-08-06`, `claude-3-5-sonnet-20241022`, Vertex's
# `claude-3-5-sonnet@20240620`). Providers' usage exports name the models so too.
_RELEASE_DATE = re.compile(r"(?:-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8})$")


def model_key(model: str) -> str:
    """The name a model budget is keyed by, a step's model is compared with, and
    reconciliation matches a provider's export by: trimmed, lower case, without known
    routing prefixes and without a release date (`OpenRouter/OpenAI/GPT-4o-2024-08-06`
    is `gpt-4o`). The snapshots of a model count as the model: OpenAI's responses name
    the dated snapshot they ran, while an operator budgets "gpt-4o". Blank stays blank."""
    return _RELEASE_DATE.sub("", without_provider_prefix(model.strip().lower()))
