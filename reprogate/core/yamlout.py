"""Write YAML that reprogate's own loader reads back to exactly the same data.

PyYAML's dumper decides whether a string needs quotes by YAML 1.1 rules, while documents.py reads
YAML 1.2: a string such as "0o17" or "1e3" would be written bare and read back as a number. This
dumper quotes every string that the 1.2 resolver would not read as that same string.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from reprogate.core.documents import resolve_plain

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class FlowMap(dict[str, Any]):
    """A mapping written on one line (`{name: a, bytes: 1}`): one shard per line diffs well."""


class _RoundTripDumper(_Dumper):  # type: ignore[misc, valid-type]  # the base is picked at run time (libyaml's CSafeDumper where built), so mypy sees Any
    pass


def _represent_str(dumper: Any, value: str) -> Any:
    if value == "<<" or not isinstance(resolve_plain(value), str):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _represent_flow(dumper: Any, value: FlowMap) -> Any:
    return dumper.represent_mapping("tag:yaml.org,2002:map", value.items(), flow_style=True)


_RoundTripDumper.add_multi_representer(str, lambda dumper, value: _represent_str(dumper, str(value)))
_RoundTripDumper.add_representer(str, _represent_str)
_RoundTripDumper.add_representer(FlowMap, _represent_flow)


def dump_yaml(data: Any, header: str = "") -> str:
    """YAML text of `data`, keys in the order given, optionally after a comment header."""
    body = yaml.dump(data, Dumper=_RoundTripDumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=120)
    lines = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return lines + body


# Strings written without the dumper: no YAML indicator first, no space, quote or flow punctuation.
# Plain when both YAML 1.2 (our reader) and YAML 1.1 (older tools: `yes`, `1_000`) read them back
# as strings; single-quoted when they hold a colon (PyYAML quotes those in flow context) or would
# read as a number, boolean or null.
_SAFE = re.compile(r"[A-Za-z0-9_./+][A-Za-z0-9_./+:-]*")
_YAML11 = yaml.resolver.Resolver()


def _flow_scalar(value: Any) -> str | None:
    if type(value) is int:
        return str(value)
    if type(value) is not str or not _SAFE.fullmatch(value):
        return None
    if ":" in value or not isinstance(resolve_plain(value), str) or _YAML11.resolve(yaml.ScalarNode, value, (True, False)) != "tag:yaml.org,2002:str":  # type: ignore[no-untyped-call]  # types-PyYAML leaves BaseResolver.resolve unannotated
        return f"'{value}'"
    return value


def flow_item(mapping: dict[str, Any]) -> str:
    """`- {key: value, ...}` and a newline: one list item as dump_yaml writes a FlowMap, never wrapped.

    Written directly for the common case (names, sizes and checksums that need no quoting), which
    is ~50x faster than a PyYAML dump per item; anything else goes through the dumper.
    """
    parts = []
    for key, value in mapping.items():
        text, key_text = _flow_scalar(value), _flow_scalar(key)
        if text is None or key_text is None:
            return yaml.dump([FlowMap(mapping)], Dumper=_RoundTripDumper, sort_keys=False, allow_unicode=True, width=1 << 30)
        parts.append(f"{key_text}: {text}")
    return "- {" + ", ".join(parts) + "}\n"
