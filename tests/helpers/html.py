"""Reading a console page as a screen reader would: which ids a field's
aria-describedby names, and which of them the page holds."""

from __future__ import annotations

from html.parser import HTMLParser


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.described: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if attrs.get("aria-describedby"):
            self.described.append(
                (attrs.get("name") or attrs.get("id") or tag, attrs["aria-describedby"].split())
            )


def unnamed_descriptions(page: str) -> dict[str, list[str]]:
    """Each element whose aria-describedby names an id no element of the page holds,
    with those ids; empty when every description is there to read."""
    parser = _Ids()
    parser.feed(page)
    missing = {}
    for name, ids in parser.described:
        absent = [i for i in ids if i not in parser.ids]
        if absent:
            missing[name] = absent
    return missing


def described_by(page: str) -> dict[str, list[str]]:
    """Each element's aria-describedby, by its name (or id)."""
    parser = _Ids()
    parser.feed(page)
    return dict(parser.described)
