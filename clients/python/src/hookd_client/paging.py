"""Walks hookd's paged List calls (page_token / next_page_token) to the end."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

_T = TypeVar("_T")


def every_page(fetch: Callable[[str], tuple[Iterable[_T], str]]) -> Iterator[_T]:
    """Yields every item of every page: ``fetch(page_token)`` returns one
    page's items and the next token, empty after the last page. Pages are
    fetched as the caller iterates, so stopping early fetches no more."""
    token = ""
    while True:
        items, token = fetch(token)
        yield from items
        if not token:
            return
