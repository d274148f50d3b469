"""The rating tables: plain data the rules and the dispatch read, kept apart from logic."""


def names(text: str) -> frozenset[str]:
    """A set of names written as one string, so that the tables stay readable."""
    return frozenset(text.split())
