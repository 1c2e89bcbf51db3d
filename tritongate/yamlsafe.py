"""YAML from files a PR can edit (suites, shape files, gate policies), read within bounds.

``yaml.safe_load`` builds no objects from tags, but a few hundred bytes of nested aliases
("billion laughs") still expand to a structure that takes gigabytes to walk or print, and a
deep enough nesting exhausts the stack. These bounds are far above any real suite.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import yaml

MAX_BYTES = 1 << 20  # 1 MiB
MAX_ALIASES = 100
MAX_NODES = 200_000
MAX_DEPTH = 64
MAX_EXPANDED = 1_000_000  # nodes once every alias is expanded: what a reader of the data walks


class YamlLimitError(ValueError):
    """A document beyond the bounds above."""


class _BoundedLoader(yaml.SafeLoader):
    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._nodes = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # a PyYAML hook
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise YamlLimitError(f"more than {MAX_ALIASES} aliases (*name): an alias bomb")
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


    def construct_mapping(self, node: Any, deep: bool = False) -> Any:  # a PyYAML hook
        # PyYAML keeps the last of two equal keys; in a suite or policy that silently drops
        # the first entry, so a repeated key is an error (merge keys `<<` are not repeats).
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: PyYAML's own error follows
                continue
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {str(key)[:80]!r} appears twice in one mapping", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def describe_yaml_error(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: where and what (PyYAML's own text spans lines)."""
    if isinstance(exc, yaml.reader.ReaderError):
        return f"not UTF-8 text: {exc.reason} at byte {exc.position}"
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return f"not valid YAML{where}: {' '.join(str(problem).split())[:300]}"


def load_bounded(raw: bytes | str) -> Any:
    """Parse one YAML document within the bounds; raises ``YamlLimitError`` or ``yaml.YAMLError``."""
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > MAX_BYTES:
        raise YamlLimitError(f"{size:,} bytes, more than the {MAX_BYTES:,} allowed")
    loader = _BoundedLoader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded = _expanded_size(node)
        if expanded > MAX_EXPANDED:
            raise YamlLimitError(f"its aliases (*name) expand to {expanded:,} nodes, more than the "
                                 f"{MAX_EXPANDED:,} allowed (an alias bomb)")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded_size(root: yaml.Node) -> int:
    """Nodes in the document with every alias expanded, counted without expanding it: an alias
    is the node it names, so each node's size is computed once (the count can reach 3**100)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # entered, not yet sized: met again, it contains itself
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:  # post-order without recursion: MAX_DEPTH bounds nesting, not alias chains
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        kids = [k for pair in node.value for k in pair] if isinstance(node, yaml.MappingNode) else \
            list(node.value) if isinstance(node, yaml.SequenceNode) else []
        if children_done:
            sizes[id(node)] = 1 + sum(sizes[id(k)] for k in kids)
            open_nodes.discard(id(node))
            continue
        if id(node) in open_nodes:  # `&a [*a]`: an alias inside what it names expands without end
            raise YamlLimitError("an alias (*name) inside the node it names: it expands without end")
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in sizes)
    return sizes[id(root)]


# -- writing: every string from a file goes into YAML through one of these -----------------

def flow_scalar(value: str | int | float | bool | None) -> str:
    """``value`` as one line of YAML that reads back as ``value`` (a key or a flow value):
    plain where PyYAML writes it so on one line, else double-quoted with every line break
    and control character escaped."""
    text = yaml.safe_dump(value, default_flow_style=True, width=2**31).removesuffix("\n...\n").removesuffix("\n")
    if "\n" in text or "\r" in text or any(unicodedata.category(ch) in ("Zl", "Zp", "Cc") for ch in text):
        text = yaml.safe_dump(value, default_style='"', width=2**31, allow_unicode=False).removesuffix("\n")
    return text


def comment_text(value: Any) -> str:
    """``value`` as text that stays inside one YAML comment: whitespace runs (every line
    break YAML knows: CR, LF, NEL, U+2028, U+2029) become one space, and control and format
    characters become visible ``\\u`` escapes, so nothing after ``#`` reaches a new line."""
    text = " ".join(str(value).split())
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp") else ch
                   for ch in text)
