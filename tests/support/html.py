"""Reading rendered pages in tests."""

from html.parser import HTMLParser


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.ids.extend(v for k, v in attrs if k == "id")


def element_ids(page: str) -> list[str]:
    """Every ``id`` attribute of a page, in order, duplicates kept (a clash shows as a repeat)."""
    parser = _Ids()
    parser.feed(page)
    return parser.ids
