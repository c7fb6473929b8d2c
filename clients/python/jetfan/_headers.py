"""A message's NATS headers ("NATS/1.0\\r\\nName: value\\r\\n...\\r\\n"), parsed on first use."""

from __future__ import annotations

from typing import Iterator, Optional


class Headers:
    """Read-only view of a message's NATS headers: (name, value) pairs in order, a name once per
    value. Names match case-insensitively, as in the TypeScript client."""

    __slots__ = ("raw", "_entries")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw  # the header block as jetfan delivered it (b"" when there is none)
        self._entries: Optional[list[tuple[str, str]]] = None

    def get(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """The first value of `name`, or `default`."""
        wanted = name.lower()
        for key, value in self._parsed():
            if key.lower() == wanted:
                return value
        return default

    def get_all(self, name: str) -> list[str]:
        """Every value of `name`, in order."""
        wanted = name.lower()
        return [value for key, value in self._parsed() if key.lower() == wanted]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._parsed())

    def __len__(self) -> int:
        return len(self._parsed())

    def __repr__(self) -> str:
        return f"Headers({self._parsed()!r})"

    def _parsed(self) -> list[tuple[str, str]]:
        if self._entries is None:
            entries: list[tuple[str, str]] = []
            # The first line is the version ("NATS/1.0", maybe with a status); a blank line ends it.
            for line in self.raw.decode("utf-8", "replace").split("\r\n")[1:]:
                if not line:
                    break
                name, colon, value = line.partition(":")
                if colon and name.strip():
                    entries.append((name.strip(), value.strip()))
            self._entries = entries
        return self._entries
