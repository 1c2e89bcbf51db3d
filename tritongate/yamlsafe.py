"""YAML from files a PR can edit (suites, shape files, gate policies), read within bounds.

``yaml.safe_load`` builds no objects from tags, but a few hundred bytes of nested aliases
("billion laughs") still expand to a structure that takes gigabytes to walk or print, and a
deep enough nesting exhausts the stack. These bounds are far above any real suite.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_BYTES = 1 << 20  # 1 MiB
MAX_ALIASES = 100
MAX_NODES = 200_000
MAX_DEPTH = 64


class YamlLimitError(ValueError):
    """A document beyond the bounds above."""


class _BoundedLoader(yaml.SafeLoader):
    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._nodes = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D102 - PyYAML hook
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise YamlLimitError(f"more than {MAX_ALIASES} aliases (*name): refused, as an alias bomb")
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise YamlLimitError(f"more than {MAX_NODES:,} nodes")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlLimitError(f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_bounded(raw: bytes | str) -> Any:
    """Parse one YAML document within the bounds; raises ``YamlLimitError`` or ``yaml.YAMLError``."""
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > MAX_BYTES:
        raise YamlLimitError(f"{size:,} bytes, more than the {MAX_BYTES:,} allowed")
    loader = _BoundedLoader(raw)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
