"""Server-rendered SVG charts: no JavaScript, no CDN, readable without a network. Each
chart is drawn from the same rows as the table printed beside it."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

WIDTH = 640
BAR_COLOR = "#417690"  # the admin's own blue


def _fmt(value: float, unit: str) -> str:
    if unit == "$":
        return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 1_000:
        return f"{value / 1_000:.1f}k"
    return f"{value:g}"


def column_chart(points: Sequence[tuple[str, float]], *, title: str, unit: str = "") -> SafeString:
    """Vertical bars over time; labels on the first, middle and last bar."""
    height, top, bottom = 200, 20, 30
    if not points:
        return format_html('<p class="empty">No data for {}.</p>', title)
    peak = max(value for _, value in points) or 1
    step = WIDTH / len(points)
    bars = _column_bars(
        points, peak=peak, step=step, top=top, inner=height - top - bottom, unit=unit
    )
    return _svg(
        title=title,
        height=height,
        heading=format_html("{} (peak {})", title, _fmt(peak, unit)),
        body=bars + _column_labels(points, step=step, y=height - 10),
    )


def _svg(*, title: str, height: int, heading: str, body: SafeString) -> SafeString:
    """A chart's frame: WIDTH wide, `height` high, `heading` on its first line."""
    return format_html(
        '<svg class="chart" role="img" aria-label="{}" viewBox="0 0 {} {}" width="{}" height="{}">'
        '<text x="0" y="12" font-size="12">{}</text>{}</svg>',
        title,
        WIDTH,
        height,
        WIDTH,
        height,
        heading,
        body,
    )


def _column_bars(
    points: Sequence[tuple[str, float]],
    *,
    peak: float,
    step: float,
    top: int,
    inner: int,
    unit: str,
) -> SafeString:
    """One bar per point, `inner` high at the peak, with its label and value as a tooltip."""
    bars = []
    for i, (label, value) in enumerate(points):
        h = max(0.0, value) / peak * inner
        bars.append(
            (
                f"{i * step + 1:.1f}",
                f"{top + inner - h:.1f}",
                f"{max(step - 2, 1):.1f}",
                f"{h:.1f}",
                f"{label}: {_fmt(value, unit)}",
            )
        )
    return format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" fill="'
        + BAR_COLOR
        + '"><title>{}</title></rect>',
        bars,
    )


def _column_labels(points: Sequence[tuple[str, float]], *, step: float, y: int) -> SafeString:
    """The labels of the first, middle and last bar, at height `y`."""
    last = len(points) - 1
    labels = []
    for i in sorted({0, len(points) // 2, last}):
        x, anchor = _label_anchor(i, last=last, step=step)
        labels.append((x, y, anchor, points[i][0]))
    return format_html_join(
        "", '<text x="{}" y="{}" font-size="11" text-anchor="{}">{}</text>', labels
    )


def _label_anchor(i: int, *, last: int, step: float) -> tuple[str, str]:
    """Where bar `i`'s label goes and how it aligns: the edge labels align inward, so
    that they are not cut off by the frame."""
    if i == 0 and last > 0:
        return f"{i * step + 1:.1f}", "start"
    if i == last and last > 0:
        return f"{(i + 1) * step - 1:.1f}", "end"
    return f"{(i + 0.5) * step:.1f}", "middle"


def bar_chart(points: Sequence[tuple[str, float]], *, title: str, unit: str = "") -> SafeString:
    """Horizontal bars for a breakdown (model, agent, step type…)."""
    row, label_width = 22, 180
    if not points:
        return format_html('<p class="empty">No data for {}.</p>', title)
    peak = max(value for _, value in points) or 1
    height = 20 + row * len(points)
    bars = []
    for i, (label, value) in enumerate(points):
        w = max(0.0, value) / peak * (WIDTH - label_width - 90)
        y = 20 + i * row
        bars.append(
            format_html(
                '<text x="0" y="{}" font-size="11">{}</text>'
                '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}</title></rect>'
                '<text x="{}" y="{}" font-size="11">{}</text>',
                y + 14,
                label[:28],
                label_width,
                y + 3,
                f"{w:.1f}",
                row - 6,
                BAR_COLOR,
                f"{label}: {_fmt(value, unit)}",
                f"{label_width + w + 4:.1f}",
                y + 14,
                _fmt(value, unit),
            )
        )
    return _svg(
        title=title,
        height=height,
        heading=title,
        body=mark_safe("".join(bars)),  # noqa: S308 - each piece escaped by format_html above
    )
