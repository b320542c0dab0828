"""The memory explorer (hybrid search and filters over a tenant's memories), one
memory's page, and the staff actions on it. Actions go through memory_app's services
and answer with a redirect (POST/redirect/GET), so a reload never repeats them."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from analytics_app.pages.layout import operator_render
from analytics_app.pages.views import staff_required
from cockpit.diffs import word_diff
from cockpit.forms import MemoryEditForm, MemoryExplorerForm
from cockpit.paging import page_number, page_of
from memory_app.selectors.audit import memory_audience, memory_for_staff, memory_relations
from memory_app.selectors.memories import Actor, memory_history, memory_list
from memory_app.selectors.search import MemoryFilters, memory_search
from memory_app.services.memories import (
    memory_delete,
    memory_reembed,
    memory_set_pinned,
    memory_update,
)
from sessions_app.errors import ApplicationError
from sessions_app.selectors.sessions import session_for_staff, tenant_for_staff

# Staff audit every memory of a tenant: visibility is what they inspect, not a limit.
OPERATOR = Actor(operator=True)
RESULTS = 25
LIST_PER_PAGE = 50


def _exact_id(query: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(query.strip())
    except ValueError:
        return None


@staff_required
def memory_explorer(request: HttpRequest) -> HttpResponse:
    form = MemoryExplorerForm(request.GET or None)
    data: dict[str, Any] = form.cleaned_data if form.is_valid() else {}
    choices = form.fields["tenant"].choices  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it
    tenant_id = data.get("tenant") or (choices[0][0] if choices else None)
    tenant = tenant_for_staff(tenant_id=tenant_id) if tenant_id else None
    query = (data.get("q") or "").strip()
    filters: dict[str, Any] = {
        "user_id": data.get("user_id") or None,
        "agent_id": data.get("agent_id") or None,
        "scope": data.get("scope") or None,
        "pinned": data.get("pinned"),
        "decay_below": data.get("decay_below"),
    }
    hits: list[Any] = []
    exact = None
    page = None
    exact_id = _exact_id(query) if query else None
    if tenant is not None and query:
        if exact_id is not None:
            found = memory_for_staff(memory_id=exact_id)
            exact = found if found is not None and found.tenant_id == tenant.pk else None
        else:
            hits = memory_search(
                tenant=tenant,
                actor=OPERATOR,
                query=query,
                types=[data["type"]] if data.get("type") else None,
                tags=[data["tag"]] if data.get("tag") else None,
                limit=RESULTS,
                user_id=filters["user_id"],
                agent_id=filters["agent_id"],
                filters=MemoryFilters(
                    scope=filters["scope"],
                    pinned=filters["pinned"],
                    decay_below=filters["decay_below"],
                ),
            ).hits
    elif tenant is not None:
        rows = memory_list(
            tenant=tenant,
            actor=OPERATOR,
            memory_type=data.get("type") or None,
            tag=data.get("tag") or None,
            **filters,
        ).order_by("-created_at", "-pk")
        page = page_of(rows, page_number(request.GET.get("page")), LIST_PER_PAGE)
    query_string = request.GET.copy()
    query_string.pop("page", None)
    context = {
        "form": form,
        "tenant": tenant,
        "query": query,
        "hits": hits,
        "exact": exact,
        "exact_id": exact_id,
        "page": page,
        "query_string": query_string.urlencode(),
    }
    return operator_render(request, "cockpit/memories.html", context)


def _staff_memory(memory_id: uuid.UUID) -> Any:
    memory = memory_for_staff(memory_id=memory_id)
    if memory is None:
        raise Http404("No such memory.")
    return memory


@staff_required
def memory_detail(request: HttpRequest, memory_id: uuid.UUID) -> HttpResponse:
    memory = _staff_memory(memory_id)
    history = memory_history(memory=memory)
    previous: str | None = None
    for version in history:
        version["diff"] = (
            version["content"] if previous is None else word_diff(previous, version["content"])
        )
        previous = version["content"]
    origin = (
        memory.structured.get("extracted_from") if isinstance(memory.structured, dict) else None
    )
    session = session_for_staff(session_id=memory.session_id) if memory.session_id else None
    context = {
        "memory": memory,
        "history": list(reversed(history)),
        "relations": memory_relations(memory=memory),
        "audience": memory_audience(memory),
        "session": session,
        "origin": origin if isinstance(origin, dict) else None,
        "edit_form": MemoryEditForm(
            initial={
                "content": memory.content,
                "importance": memory.importance,
                "confidence": memory.confidence,
            }
        ),
    }
    return operator_render(request, "cockpit/memory.html", context)


@staff_required
@require_POST
def memory_action(request: HttpRequest, memory_id: uuid.UUID) -> HttpResponseRedirect:
    memory = _staff_memory(memory_id)
    action = request.POST.get("action", "")
    here = reverse("cockpit-memory", args=[memory.pk])
    try:
        if action in ("pin", "unpin"):
            memory_set_pinned(memory=memory, pinned=action == "pin")
            messages.success(request, f"Memory {action}ned.")
        elif action == "reembed":
            memory_reembed(memory=memory)
            messages.success(request, f"Re-embedded with {memory.embedding_model}.")
        elif action == "edit":
            form = MemoryEditForm(request.POST)
            if not form.is_valid():
                messages.error(request, f"Not saved: {form.errors.as_text()}")
                return redirect(here)
            changes = {
                name: value
                for name, value in form.cleaned_data.items()
                if value != getattr(memory, name)
            }
            if not changes:
                messages.info(request, "Nothing changed.")
                return redirect(here)
            memory = memory_update(memory=memory, changes=changes)
            messages.success(request, f"Saved as version {memory.version}.")
        elif action == "delete":
            memory_delete(memory=memory)
            messages.success(request, "Memory deleted.")
            explorer = reverse("cockpit-memories")
            return redirect(f"{explorer}?tenant={memory.tenant_id}")
        else:
            messages.error(request, f"Unknown action {action!r}.")
    except ApplicationError as exc:
        messages.error(request, exc.message)
    return redirect(here)
