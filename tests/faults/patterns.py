"""Topic patterns, as config/topic_pattern.hpp defines them, so the checker knows from a handler's
patterns alone which keys it must get.

A key is tokens separated by '.'. In a pattern '*' matches exactly one token, '#' zero or more
tokens anywhere, '>' one or more tokens and only as the last token.
"""

from functools import lru_cache


def matches(pattern: str, key: str) -> bool:
    return _match(tuple(pattern.split(".")), tuple(key.split(".")))


@lru_cache(maxsize=None)
def _match(pattern: tuple, key: tuple) -> bool:
    if not pattern:
        return not key
    head, rest = pattern[0], pattern[1:]
    if head == "#":
        return any(_match(rest, key[i:]) for i in range(len(key) + 1))
    if head == ">":
        return not rest and len(key) >= 1
    if not key:
        return False
    if head == "*" or head == key[0]:
        return _match(rest, key[1:])
    return False


def matches_any(patterns, key: str) -> bool:
    return any(matches(p, key) for p in patterns)
