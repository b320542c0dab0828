"""The memory explorer (hybrid search and filters over a tenant's memories), one
memory's page, and the staff actions on it. Actions go through memory_app's services
and answer with a redirect (POST/redirect/GET), so a reload never repeats them."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

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
from memory_app.selectors.explorer import (
    Exploration,
    ExplorerCriteria,
    memory_explore,
    memory_id_in,
)
from memory_app.selectors.memories import memory_history
from memory_app.services.memories import (
    memory_delete,
    memory_reembed,
    memory_set_pinned,
    memory_update,
)
from sessions_app.errors import ApplicationError
from sessions_app.selectors.sessions import session_for_staff, tenant_for_staff

if TYPE_CHECKING:
    from sessions_app.models import Tenant

RESULTS = 25
LIST_PER_PAGE = 50


@staff_required
def memory_explorer(request: HttpRequest) -> HttpResponse:
    form = MemoryExplorerForm(request.GET or None)
    data: dict[str, Any] = form.cleaned_data if form.is_valid() else {}
    tenant = _tenant_chosen(form, data)
    criteria = _explorer_criteria(data)
    found = (
        memory_explore(tenant=tenant, criteria=criteria, limit=RESULTS)
        if tenant is not None
        else Exploration(exact_id=memory_id_in(criteria.query))
    )
    page = None
    if found.listed is not None:
        page = page_of(found.listed, page_number(request.GET.get("page")), LIST_PER_PAGE)
    query_string = request.GET.copy()
    query_string.pop("page", None)
    context = {
        "form": form,
        "tenant": tenant,
        "query": criteria.query,
        "hits": found.hits,
        "exact": found.exact,
        "exact_id": found.exact_id,
        "page": page,
        "query_string": query_string.urlencode(),
    }
    return operator_render(request, "cockpit/memories.html", context)


def _tenant_chosen(form: MemoryExplorerForm, data: dict[str, Any]) -> Tenant | None:
    """The tenant the form names, else the first it offers; None when there is none."""
    choices = form.fields["tenant"].choices  # type: ignore[attr-defined]  # set at run time; the stubs do not declare it
    tenant_id = data.get("tenant") or (choices[0][0] if choices else None)
    return tenant_for_staff(tenant_id=tenant_id) if tenant_id else None


def _explorer_criteria(data: dict[str, Any]) -> ExplorerCriteria:
    """The form's cleaned data as the explorer's criteria; a blank field is no filter."""
    return ExplorerCriteria(
        query=(data.get("q") or "").strip(),
        memory_type=data.get("type") or None,
        tag=data.get("tag") or None,
        user_id=data.get("user_id") or None,
        agent_id=data.get("agent_id") or None,
        scope=data.get("scope") or None,
        pinned=data.get("pinned"),
        decay_below=data.get("decay_below"),
    )


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
