"""Checks of a rendered page's layout and text, run in the browser: text squeezed to a
letter or two per line, and characters that no installed font can draw."""

from __future__ import annotations

import functools
import subprocess

from playwright.sync_api import Page

# The elements an operator reads or clicks. Inputs are left out: their value never wraps.
READABLE = "a, button, h1, h2, h3, th, caption, label, summary"

# For each readable element with more than three characters: the lines its text takes
# (distinct tops of the text's line boxes, from a Range over its contents, so a table
# cell's padding or row height does not count) and its text's width. Squeezed: more
# than one line with fewer than three characters on each, or narrower than two
# characters' worth (a font size is about two average characters wide).
_SQUEEZED_JS = """
(selector) => {
  const found = [];
  for (const el of document.querySelectorAll(selector)) {
    const text = (el.innerText || "").replace(/\\s+/g, " ").trim();
    if (text.length <= 3) continue;
    const style = getComputedStyle(el);
    if (style.visibility !== "visible") continue;
    const range = document.createRange();
    range.selectNodeContents(el);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
    if (rects.length === 0) continue;  // not rendered
    const fontSize = parseFloat(style.fontSize);
    const tops = rects.map((r) => r.top).sort((a, b) => a - b);
    let lines = 1;
    for (let i = 1; i < tops.length; i++) {
      if (tops[i] - tops[i - 1] > fontSize / 2) lines += 1;
    }
    const width = range.getBoundingClientRect().width;
    if ((lines > 1 && text.length / lines < 3) || width < fontSize) {
      found.push(`<${el.tagName.toLowerCase()}> "${text.slice(0, 40)}": ` +
                 `${lines} lines, ${Math.round(width)}px wide`);
    }
  }
  return found;
}
"""

# Every character the page shows: its text nodes (SVG charts' labels included), the
# labels of its submit buttons and its title.
_SHOWN_TEXT_JS = """
() => {
  const parts = [document.title];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => ["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE"].includes(
      node.parentElement && node.parentElement.tagName) ? NodeFilter.FILTER_REJECT
                                                         : NodeFilter.FILTER_ACCEPT,
  });
  while (walker.nextNode()) parts.push(walker.currentNode.nodeValue);
  for (const input of document.querySelectorAll("input[type=submit], input[type=button]")) {
    parts.push(input.value);
  }
  return parts.join("");
}
"""


def squeezed_text(page: Page) -> list[str]:
    """The readable elements whose text is squeezed to one or two characters per line."""
    found: list[str] = page.evaluate(_SQUEEZED_JS, READABLE)
    return found


@functools.cache
def has_font_for(char: str) -> bool:
    """Whether fontconfig, which Chromium asks for fallbacks on Linux, knows an installed
    font with a glyph for this character."""
    families = subprocess.run(
        ["fc-list", f":charset={ord(char):x}", "family"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return bool(families.strip())


def missing_glyphs(page: Page) -> set[str]:
    """The characters the page shows that no installed font can draw (a box on screen)."""
    shown = set(page.evaluate(_SHOWN_TEXT_JS))
    return {c for c in shown if not c.isspace() and ord(c) > 0x7E and not has_font_for(c)}
