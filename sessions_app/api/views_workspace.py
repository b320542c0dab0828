"""Session workspace routes: results, components, references, focus, cart, cart links.

Thin: each view validates input with a serializer, finds the caller's session (404 for
another tenant's, 410 for an expired one on writes) and calls one service or selector."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app.api.renderers import CsvRenderer, csv_text
from sessions_app.api.serializers_workspace import (
    CartLineAddedSerializer,
    CartLineSerializer,
    CartLinkCreateSerializer,
    CartLinkSerializer,
    CartSerializer,
    ComponentListSerializer,
    FocusSetSerializer,
    ResolvedSerializer,
    ResolveQuerySerializer,
    ResultsStoredSerializer,
    ResultsStoreSerializer,
    SelectionAddSerializer,
    SelectionReorderSerializer,
    SelectionUpdateSerializer,
    cart_body,
    results_stored_body,
)
from sessions_app.api.tenancy import TenantAPIView
from sessions_app.errors import InvalidInput
from sessions_app.models import ChatSession
from sessions_app.selectors.sessions import session_get, session_get_for_write
from sessions_app.selectors.workspace import component_list, selection_lines
from sessions_app.services.cart_links import cart_link_create, cart_links_revoke
from sessions_app.services.references import session_focus_set, session_reference_resolve
from sessions_app.services.results import ResultItem, session_results_store
from sessions_app.services.selections import (
    selection_add,
    selection_remove,
    selection_reorder,
    selection_update,
)

ERRORS = {
    400: OpenApiResponse(description="Invalid input (`invalid`), with the fields at fault."),
    404: OpenApiResponse(description="No such session for this tenant (`not_found`)."),
}
WRITE_ERRORS = {
    **ERRORS,
    410: OpenApiResponse(description="The session has expired (`session_expired`)."),
}


class SessionWorkspaceView(TenantAPIView):
    """Base: the session of the URL, scoped to the caller's tenant."""

    def session(self, session_id: Any) -> ChatSession:
        return session_get(tenant=self.tenant, session_id=session_id)

    def session_for_write(self, session_id: Any) -> ChatSession:
        return session_get_for_write(tenant=self.tenant, session_id=session_id)


class ResultsView(SessionWorkspaceView):
    @extend_schema(
        request=ResultsStoreSerializer,
        responses={201: ResultsStoredSerializer, **WRITE_ERRORS},
        summary="Store a search's results in order",
    )
    def post(self, request: Request, session_id: str) -> Response:
        session = self.session_for_write(session_id)
        payload = ResultsStoreSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        session = session_results_store(
            session=session,
            query=data["query"],
            filters=data["filters"],
            items=[ResultItem(**item) for item in data["items"]],
        )
        return Response(results_stored_body(session), status=status.HTTP_201_CREATED)


class ComponentListView(SessionWorkspaceView):
    @extend_schema(
        responses={200: ComponentListSerializer, **ERRORS},
        summary="Every item fetched in the session",
        description="Last results first by position, then the rest newest first. Not "
        "paginated: a session keeps at most ENGRAM_MAX_FETCHED_ITEMS items (plus those "
        "held by the cart or the focus).",
    )
    def get(self, request: Request, session_id: str) -> Response:
        components = list(component_list(session=self.session(session_id)))
        return Response(
            ComponentListSerializer({"count": len(components), "results": components}).data
        )


class ResolveView(SessionWorkspaceView):
    @extend_schema(
        parameters=[ResolveQuerySerializer],
        responses={
            200: ResolvedSerializer,
            **WRITE_ERRORS,
            404: OpenApiResponse(
                description="`unresolved` (with `candidates`) or no such session."
            ),
            409: OpenApiResponse(description="`ambiguous`, with `candidates`."),
        },
        summary="Resolve a reference to an item",
        description="Finds the referring expression inside a whole utterance. Sets the "
        "focus unless set_focus=false (a write: 410 on an expired session).",
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = ResolveQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        set_focus = params.validated_data["set_focus"]
        session = self.session_for_write(session_id) if set_focus else self.session(session_id)
        resolved = session_reference_resolve(
            session=session, ref=params.validated_data["ref"], set_focus=set_focus
        )
        return Response(ResolvedSerializer(resolved).data)


class FocusView(SessionWorkspaceView):
    @extend_schema(
        request=FocusSetSerializer,
        responses={
            200: ResolvedSerializer,
            **WRITE_ERRORS,
            404: OpenApiResponse(
                description="`unresolved` reference (with `candidates`), no fetched item of "
                "that MPN, or no such session."
            ),
            409: OpenApiResponse(description="`ambiguous` reference, with `candidates`."),
        },
        summary="Set the focus by MPN or reference",
    )
    def put(self, request: Request, session_id: str) -> Response:
        session = self.session_for_write(session_id)
        payload = FocusSetSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        resolved = session_focus_set(session=session, **payload.validated_data)
        return Response(ResolvedSerializer(resolved).data)


class CsvExportMixin(APIView):
    """Errors of a CSV-capable view still leave as JSON in the documented shape, and a
    `format` it cannot render is a 400 naming the parameter (DRF's own negotiation
    answered an unknown one 404 and ignored an empty one)."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[Any, str]:
        requested = request.query_params.get("format")
        formats = [renderer.format for renderer in self.get_renderers()]
        if not force and requested is not None and requested not in formats:
            raise InvalidInput(fields={"format": [f"One of: {', '.join(sorted(formats))}."]})
        return super().perform_content_negotiation(request, force)  # type: ignore[no-any-return]  # an untyped third-party value

    def handle_exception(self, exc: Exception) -> Response:
        response: Response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


CSV_HEADER = ("position", "mpn", "name", "component_type", "quantity", "price", "note")


def cart_csv(session: ChatSession) -> HttpResponse:
    lines = selection_lines(session=session)
    text = csv_text(
        CSV_HEADER,
        (
            (ln.position, ln.mpn, ln.name, ln.component_type, ln.quantity, ln.price, ln.note)
            for ln in lines
        ),
    )
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="cart-{session.pk}.csv"'
    return response


class SelectionListView(CsvExportMixin, SessionWorkspaceView):
    renderer_classes = [JSONRenderer, CsvRenderer]
    openapi_produces = {"POST": {"mpn": "/mpn"}}

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "format", OpenApiTypes.STR, enum=["json", "csv"], description="csv: export."
            )
        ],
        responses={
            200: CartSerializer,
            (200, "text/csv"): OpenApiTypes.STR,
            **ERRORS,
        },
        summary="The cart in order (JSON, or CSV with ?format=csv)",
    )
    def get(self, request: Request, session_id: str) -> Response | HttpResponse:
        session = self.session(session_id)
        if request.accepted_renderer.format == "csv":
            return cart_csv(session)
        return Response(cart_body(selection_lines(session=session)))

    @extend_schema(
        request=SelectionAddSerializer,
        responses={
            201: OpenApiResponse(CartLineAddedSerializer, description="Added (`added` true)."),
            200: OpenApiResponse(
                CartLineAddedSerializer,
                description="Already in the cart (`added` false): nothing changed, the line "
                "keeps its quantity and note.",
            ),
            **WRITE_ERRORS,
            404: OpenApiResponse(
                description="`item_not_found` (not fetched in this session), `unresolved`, "
                "or no such session."
            ),
            409: OpenApiResponse(description="`ambiguous` reference, or `cart_full`."),
        },
        summary="Add an item to the cart by MPN or reference",
        description="Adding an item that is already in the cart changes nothing and answers "
        "its line with `added` false (200), so a retried add cannot double it.",
    )
    def post(self, request: Request, session_id: str) -> Response:
        session = self.session_for_write(session_id)
        payload = SelectionAddSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        line, created = selection_add(session=session, **payload.validated_data)
        return Response(
            {**CartLineSerializer(line).data, "added": created},
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class SelectionCsvView(CsvExportMixin, SessionWorkspaceView):
    renderer_classes = [CsvRenderer, JSONRenderer]

    @extend_schema(
        responses={(200, "text/csv"): OpenApiTypes.STR, **ERRORS},
        summary="The cart as CSV",
        operation_id="sessions_selections_csv",
    )
    def get(self, request: Request, session_id: str) -> HttpResponse:
        return cart_csv(self.session(session_id))


class SelectionDetailView(SessionWorkspaceView):
    @extend_schema(
        request=SelectionUpdateSerializer,
        responses={
            200: CartLineSerializer,
            **WRITE_ERRORS,
            404: OpenApiResponse(description="`not_in_cart`, or no such session."),
        },
        summary="Change a cart line's quantity or note",
    )
    def patch(self, request: Request, session_id: str, mpn: str) -> Response:
        session = self.session_for_write(session_id)
        payload = SelectionUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        line = selection_update(session=session, mpn=mpn, **payload.validated_data)
        return Response(CartLineSerializer(line).data)

    @extend_schema(
        responses={
            204: None,
            **WRITE_ERRORS,
            404: OpenApiResponse(description="`not_in_cart`, or no such session."),
        },
        summary="Remove a cart line; positions stay contiguous",
    )
    def delete(self, request: Request, session_id: str, mpn: str) -> Response:
        selection_remove(session=self.session_for_write(session_id), mpn=mpn)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SelectionReorderView(SessionWorkspaceView):
    @extend_schema(
        request=SelectionReorderSerializer,
        responses={200: CartSerializer, **WRITE_ERRORS},
        summary="Reorder the cart",
        description="`mpns` must list every MPN of the cart exactly once, else 400.",
    )
    def post(self, request: Request, session_id: str) -> Response:
        session = self.session_for_write(session_id)
        payload = SelectionReorderSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        selection_reorder(session=session, mpns=payload.validated_data["mpns"])
        return Response(cart_body(selection_lines(session=session)))


class CartLinkView(SessionWorkspaceView):
    @extend_schema(
        request=CartLinkCreateSerializer,
        responses={201: CartLinkSerializer, **WRITE_ERRORS},
        summary="A signed, expiring URL of the browser cart page",
        description="The body is optional; an unknown field or a `ttl_seconds` out of "
        "range is a 400 naming it.",
    )
    def post(self, request: Request, session_id: str) -> Response:
        session = self.session_for_write(session_id)
        payload = CartLinkCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        link = cart_link_create(session=session, **payload.validated_data)
        return Response(
            CartLinkSerializer({"url": link.url, "expires_at": link.expires_at}).data,
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(
        request=None,
        responses={204: None, **ERRORS},
        summary="Revoke every cart link issued so far, before it expires",
        description="Links issued before this call answer 410 `cart_link_expired` "
        "(revoked); a new POST issues a working link.",
    )
    def delete(self, request: Request, session_id: str) -> Response:
        cart_links_revoke(session=self.session(session_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
