"""No page scrolls sideways, on a phone (390 px) or a desktop (1366 px).

`OverflowWatch` watches every page of a browser context: each document reports its
`scrollWidth` against `innerWidth` when it loads and when it is left (the binding below,
one evaluate in the page and no round trip), and `check()` — called before the context
closes — measures the open pages at both widths in place and visits at phone width each
other page the test opened (once per kind of page a run: /sessions/N/ is one kind).
Plain code, no fixtures: `checked_contexts` gives the browser fixtures their contexts, each
one watched and checked before it closes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from playwright.sync_api import ViewportSize

PHONE: ViewportSize = {"width": 390, "height": 844}
DESKTOP: ViewportSize = {"width": 1366, "height": 900}

MEASURE = "() => [document.documentElement.scrollWidth, window.innerWidth]"

# The elements that reach past the window's right edge, widest first, leaving out those
# inside a box that scrolls or clips them (a diff, a wide <pre>): named in a failure.
CULPRITS = """() => {
  const edge = window.innerWidth;
  const boxed = (el) => {
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible") return true;
    }
    return false;
  };
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (typeof el.className === "string" && el.className.trim() ?
      "." + el.className.trim().split(/\\s+/).join(".") : "");
  return Array.from(document.querySelectorAll("body *"))
    .map((el) => [el, el.getBoundingClientRect().right])
    .filter(([el, right]) => right > edge + 0.5 && !boxed(el))
    .sort((a, b) => b[1] - a[1]).slice(0, 5)
    .map(([el, right]) => name(el) + " reaches " + Math.round(right) + " px");
}"""

REPORTER = """(() => {
  if (window.top !== window) return;
  const report = (when) => {
    const report = window.__agentwebLayout;
    if (report) report(location.href, document.documentElement.scrollWidth,
                       window.innerWidth, when);
  };
  addEventListener("load", () => report("load"));
  addEventListener("pagehide", () => report("leave"));
})();"""

CHECKED_KINDS: set[str] = set()  # the kinds of page seen at phone width this run


def page_kind(url: str) -> str:
    """/sessions/12/?status=x → /sessions/N/?status: one layout, whatever the ids."""
    parts = urlsplit(url)
    keys = sorted({key for key, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return re.sub(r"/\d+(?=/|$)", "/N", parts.path) + ("?" + "&".join(keys) if keys else "")


@dataclass
class OverflowWatch:
    """Every overflow seen in one browser context, and the pages it loaded."""

    base_url: str
    screenshots: Path | None = None
    visited: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)

    def attach(self, context: Any) -> None:
        context.expose_binding("__agentwebLayout", self._reported)
        context.add_init_script(REPORTER)

    def _reported(self, source: Any, url: str, scroll: int, inner: int, when: str) -> None:
        """Called from the page: record only (no Playwright call in a binding)."""
        if url.startswith(self.base_url) and url not in self.visited:
            self.visited.append(url)
        if scroll > inner:
            self.faults.append(f"{url} at {inner} px is {scroll} px wide (on {when})")

    def check(self, context: Any) -> None:
        """Measure the open pages at both widths, visit the others at phone width, and
        fail naming each page that scrolls sideways and what sticks out."""
        open_urls = set()
        for page in list(context.pages):
            if page.is_closed() or not page.url.startswith(self.base_url):
                continue
            open_urls.add(page.url)
            for size in (DESKTOP, PHONE):
                page.set_viewport_size(size)
                self.measure(page, "the end of the test")
        unseen = [url for url in self.visited if url not in open_urls]
        self.visit_at_phone_width(context, unseen)
        assert not self.faults, "pages scroll sideways:\n" + "\n".join(self.faults)

    def visit_at_phone_width(self, context: Any, urls: list[str]) -> None:
        page = None
        for url in urls:
            kind = page_kind(url)
            if kind in CHECKED_KINDS:
                continue
            CHECKED_KINDS.add(kind)
            page = page or context.new_page()
            page.set_viewport_size(PHONE)
            answer = page.goto(url)
            if answer is not None and answer.ok:
                self.measure(page, "a second visit")
        if page is not None:
            page.close()

    def measure(self, page: Any, when: str) -> None:
        scroll, inner = page.evaluate(MEASURE)
        if inner <= PHONE["width"]:
            CHECKED_KINDS.add(page_kind(page.url))
        if scroll <= inner:
            return
        culprits = "; ".join(page.evaluate(CULPRITS)) or "no single element"
        self.faults.append(f"{page.url} at {inner} px is {scroll} px wide ({when}): {culprits}")
        if self.screenshots is not None:
            self.screenshots.mkdir(parents=True, exist_ok=True)
            name = re.sub(r"[^a-z0-9]+", "-", page_kind(page.url).lower()).strip("-") or "home"
            page.screenshot(path=self.screenshots / f"overflow-{name}-{inner}.png", full_page=True)


@contextmanager
def checked_contexts(
    browser: Any, base_url: str, screenshots: Path | None = None
) -> Iterator[Callable[[], Any]]:
    """`new_context()`: a fresh browser context at desktop width whose pages are checked
    for sideways scrolling when the block ends; every context is closed then."""
    contexts: list[tuple[Any, OverflowWatch]] = []

    def new_context() -> Any:
        context = browser.new_context(base_url=base_url, viewport=DESKTOP)
        context.set_default_timeout(20_000)
        watch = OverflowWatch(base_url, screenshots)
        watch.attach(context)
        contexts.append((context, watch))
        return context

    try:
        yield new_context
        for context, watch in contexts:
            watch.check(context)
    finally:
        for context, _ in contexts:
            context.close()
