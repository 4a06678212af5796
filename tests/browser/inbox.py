"""The approvals inbox as a reviewer uses it, through the names DESIGN.md keeps stable:
the nav link "Approvals"; buttons "Approve", "Deny", "Edit & approve", "Approve &
remember"; a field labelled "Reason". A card is found by its text (the tool, the
command, the path), never by a CSS class, so these keep working when the page changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Locator, Page, expect


def open_inbox(page: Page) -> None:
    """Follow the nav link, then mark the window: a reload or navigation would drop it."""
    page.get_by_role("link", name="Approvals", exact=True).first.click()
    page.wait_for_load_state()
    page.evaluate("window.__marker = 1")


def not_reloaded(page: Page) -> bool:
    return bool(page.evaluate("window.__marker === 1"))


def card(page: Page, text: str) -> Locator:
    """The innermost element that shows `text` and has an Approve button: the card."""
    approve = page.get_by_role("button", name="Approve", exact=True)
    return page.locator("*").filter(has_text=text).filter(has=approve).last


def cards_showing(page: Page, text: str) -> Locator:
    approve = page.get_by_role("button", name="Approve", exact=True)
    return page.locator("*").filter(has_text=text).filter(has=approve)


def approve(page: Page, text: str) -> None:
    card(page, text).get_by_role("button", name="Approve", exact=True).click()


def deny(page: Page, text: str, reason: str) -> None:
    """Fill in the Reason (opening it with Deny first if the card hides it), then Deny."""
    shown = card(page, text)
    field = shown.get_by_label("Reason")
    if not field.is_visible():
        shown.get_by_role("button", name="Deny", exact=True).first.click()
    field.fill(reason)
    visible_button(shown, "Deny").click()


def edit_and_approve(page: Page, text: str, edit: Callable[[str], str]) -> None:
    """Open the editor, change the content (the text area, or its `content` when it
    holds the arguments as JSON) and approve the edited call."""
    shown = card(page, text)
    shown.locator("summary", has_text="Edit").first.click()  # the editor's panel
    area = shown.locator("textarea:visible").first
    area.fill(_edited(area.input_value(), edit))
    visible_button(shown, "Edit & approve").click()


def _edited(value: str, edit: Callable[[str], str]) -> str:
    try:
        args: Any = json.loads(value)
    except json.JSONDecodeError:
        return edit(value)
    if isinstance(args, dict) and isinstance(args.get("content"), str):
        return json.dumps({**args, "content": edit(args["content"])})
    return edit(value)


def visible_button(scope: Locator, name: str) -> Locator:
    return scope.get_by_role("button", name=name, exact=True).locator("visible=true").last


def gone(page: Page, text: str, timeout: float = 20_000) -> None:
    expect(cards_showing(page, text)).to_have_count(0, timeout=timeout)
