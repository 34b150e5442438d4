"""YAML files people write, read strictly: a size cap (read no further than it), UTF-8
only, no key written twice in a mapping, and aliases (*name) that expand the document
by a few thousand values at most (an alias bomb grows to gigabytes), nothing nested
past what Python can walk. Each refusal names the file, the line and what to fix."""

from __future__ import annotations

from pathlib import Path

import yaml

#: The values aliases may add to a document (each use of an alias counts its value's).
ALIAS_EXPANSION = 10_000


class StrictYamlError(ValueError):
    """A file refused; the message names it, the line and the fix."""


def read_capped(path: Path, max_bytes: int, what: str) -> str:
    """The file's text, read no further than `max_bytes` (a device, a pipe or a growing
    file too), UTF-8 (a byte order mark is allowed)."""
    try:
        with open(path, "rb") as fp:
            data = fp.read(max_bytes + 1)
    except OSError as err:
        raise StrictYamlError(f"{path}: cannot read the {what}: {err.strerror}") from None
    if len(data) > max_bytes:
        raise StrictYamlError(f"{path}: larger than {_size(max_bytes)}, the most a {what} "
                              "may be: keep only what it needs in it")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise StrictYamlError(
            f"{path}: line {line}: byte 0x{data[err.start]:02x} is not UTF-8 ({err.reason}); "
            "the file is in another encoding (Latin-1?): save it as UTF-8") from None


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n >> 10} KiB"


class _Loader(yaml.SafeLoader):
    def __init__(self, stream: str):
        super().__init__(stream)
        self.alias_uses: list[tuple[str, yaml.Mark, yaml.Node]] = []

    def compose_node(self, parent, index):
        if not self.check_event(yaml.AliasEvent):
            return super().compose_node(parent, index)
        event = self.peek_event()
        node = super().compose_node(parent, index)
        self.alias_uses.append((event.anchor, event.start_mark, node))
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    line = first.setdefault(key, key_node.start_mark.line + 1)
                except TypeError:
                    continue  # an unhashable key: SafeLoader says so below
                if line != key_node.start_mark.line + 1:
                    raise StrictYamlError(
                        f"line {key_node.start_mark.line + 1}: key {key!r} is written twice "
                        f"in this mapping (first on line {line}); keep one")
        return super().construct_mapping(node, deep)


def _expanded(node: yaml.Node, memo: dict[int, int], open_: set[int]) -> int:
    """The values a node stands for once every alias in it is written out."""
    key = id(node)
    if key in memo:
        return memo[key]
    if key in open_:
        raise StrictYamlError(f"line {node.start_mark.line + 1}: a value contains an alias "
                              "of itself; write the values out")
    open_.add(key)
    if isinstance(node, yaml.SequenceNode):
        total = 1 + sum(_expanded(n, memo, open_) for n in node.value)
    elif isinstance(node, yaml.MappingNode):
        total = 1 + sum(_expanded(k, memo, open_) + _expanded(v, memo, open_)
                        for k, v in node.value)
    else:
        total = 1
    open_.discard(key)
    memo[key] = total
    return total


def _check_aliases(root: yaml.Node, loader: _Loader) -> None:
    if not loader.alias_uses:
        return
    memo: dict[int, int] = {}
    total = _expanded(root, memo, set())
    written = len(memo)  # each node once, as the file holds it
    if total - written <= ALIAS_EXPANSION:
        return
    anchor, mark, node = max(loader.alias_uses, key=lambda a: memo[id(a[2])])
    raise StrictYamlError(f"line {mark.line + 1}: alias *{anchor} stands for {memo[id(node)]} "
                          f"values and the aliases add {total - written} in all, more than "
                          f"the {ALIAS_EXPANSION} allowed: write the values out")


def load_yaml(path: Path, max_bytes: int, what: str):
    """The document of a YAML file, read strictly (see the module); StrictYamlError
    names the file."""
    text = read_capped(path, max_bytes, what)
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as err:
        line = text[:err.position].count("\n") + 1
        raise StrictYamlError(f"{path}: line {line}: character #x{err.character:04x} is not "
                              "allowed in YAML: remove it") from None
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_aliases(root, loader)
        return loader.construct_document(root)
    except StrictYamlError as err:
        raise StrictYamlError(f"{path}: {err}") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}: " if mark else ""
        raise StrictYamlError(f"{path}: {where}not valid YAML ({err.problem or err.context})"
                              ) from None
    except yaml.YAMLError as err:
        raise StrictYamlError(f"{path}: not valid YAML ({err})") from None
    except RecursionError:
        raise StrictYamlError(f"{path}: nested too deeply to read; write it flatter") from None
    finally:
        loader.dispose()
