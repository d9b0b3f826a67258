"""The keys of the configuration schema, as the configuration reference (:mod:`hardneg.pipeline.config_reference`)
lists them: each with its type and allowed values as a short phrase, its default, whether it is required and the
variant of its parent it belongs to (:class:`Key`).

The keys are found by walking the composed schema (:func:`composed_schema`: the schema file with the run variants
of the registered methods, as :func:`hardneg.pipeline.config.load_schema` composes it) depth first in schema
order: a ``$ref`` is resolved into ``$defs``, and the walk follows a list's items, the entries of a mapping keyed by
name and a mapping's variants (``if``/``then``/``else``, alone or in ``allOf``). A method's input roles and its own
parameters come from the method registry (:func:`method_keys`), so the keys are those the validator reads.

Keys are named by dotted paths. An entry of a mapping keyed by name stands as a placeholder (``runs.<run>``,
``datasets.<name>``, ``downloads.<path>``, ``resources.<rule>``), an item of a list as ``[]``
(``summary.groups[].marker``). A key that holds only in one variant of its mapping (one dataset adapter, one
kind of download, one method) carries that variant (:attr:`Key.variant`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from hardneg.methods.registry import (
    DENSE,
    DENSE_PROVIDES,
    FUSION,
    LEXICAL,
    MODEL_PROVIDES,
    RERANK,
    TRAINED,
    Method,
)
from hardneg.pipeline import reference_markdown as md
from hardneg.pipeline.config import with_methods
from hardneg.schema.validation import read_schema

_DEFS = "#/$defs/"
_NAME_REF = _DEFS + "name"
# How an entry of a mapping keyed by name is written in a dotted path, by the mapping's top-level key.
_PLACEHOLDERS = {"runs": "<run>", "downloads": "<path>", "resources": "<rule>"}
_DEFAULT_PLACEHOLDER = "<name>"
RUN_KEY = "runs.<run>"
KIND_TITLES = {LEXICAL: "lexical runs", DENSE: "dense runs", RERANK: "re-ranking runs", FUSION: "fusion runs"}


@dataclass(frozen=True)
class Key:
    """One key of the configuration: its dotted ``path``, its own ``description`` ("" when it has none), its
    type and allowed values as text (``kind``), its default as a YAML literal (None when it has no default),
    whether it must be given when its parent is (``required``), and the ``variant`` of its parent it belongs to
    ("" when it holds in every one; e.g. ``method abs``)."""

    path: str
    description: str
    kind: str
    default: str | None = None
    required: bool = False
    variant: str = ""

    @property
    def where(self) -> str:
        """The path, followed by the variant when the key belongs to one: what an error names."""
        return f"{self.path} ({self.variant})" if self.variant else self.path


# ------------------------------------------------------------------------------------------------- the schema
def composed_schema(schema: dict | None = None) -> dict:
    """The configuration schema as written (default: the package's, :func:`hardneg.schema.validation.read_schema`)
    with the registered methods' run variants added (:func:`hardneg.pipeline.config.with_methods`). A schema that
    has its run variants already is returned as it is."""
    schema = read_schema() if schema is None else schema
    return schema if "allOf" in schema["$defs"]["run"] else with_methods(schema)


def resolve(node: dict, defs: dict) -> dict:
    """``node`` with its ``$ref`` (into ``$defs``) replaced by the schema it names; the node's own keywords win."""
    while isinstance(node, dict) and "$ref" in node:
        target = defs[node["$ref"].removeprefix(_DEFS)]
        node = {**target, **{key: value for key, value in node.items() if key != "$ref"}}
    return node


def _types(node: dict) -> list[str]:
    types = node.get("type", [])
    return [types] if isinstance(types, str) else list(types)


def has_keys(node: dict, defs: dict) -> bool:
    """Whether a schema declares keys of its own (directly, in its items, its entries or its variants)."""
    node = resolve(node, defs)
    if not isinstance(node, dict):
        return False
    if node.get("properties") or node.get("allOf") or "then" in node:
        return True
    entries = node.get("additionalProperties")
    if isinstance(entries, dict) and has_keys(entries, defs):
        return True
    return "array" in _types(node) and isinstance(node.get("items"), dict) and has_keys(node["items"], defs)


# -------------------------------------------------------------------------------------------- types as text
def _number_bounds(node: dict) -> str:
    low = (
        ("[", node["minimum"])
        if "minimum" in node
        else ("(", node["exclusiveMinimum"])
        if "exclusiveMinimum" in node
        else None
    )
    high = (
        ("]", node["maximum"])
        if "maximum" in node
        else (")", node["exclusiveMaximum"])
        if "exclusiveMaximum" in node
        else None
    )
    if low and high:
        return f" in {low[0]}{low[1]}, {high[1]}{high[0]}"
    if low:
        return f" {'≥' if low[0] == '[' else '>'} {low[1]}"
    if high:
        return f" {'≤' if high[0] == ']' else '<'} {high[1]}"
    return ""


def _count(low: int | None, high: int | None, unit: str) -> str:
    """A count of items, entries or characters: "2 items", "at least 1 item", "1 to 4 characters"."""
    plural = lambda n: unit if n == 1 else f"{unit}s"  # noqa: E731
    if low is not None and low == high:
        return f"{low} {plural(low)}"
    if low and high is not None:
        return f"{low} to {high} {plural(high)}"
    if high is not None:
        return f"at most {high} {plural(high)}"
    if low:
        return f"at least {low} {plural(low)}"
    return ""


_PLURALS = {
    "integer": "integers",
    "number": "numbers",
    "string": "strings",
    "boolean": "booleans",
    "name": "names",
    "mapping": "mappings",
    "null": "nulls",
    "list": "lists",
}


def _plural(kind: str) -> str:
    head, _, rest = kind.partition(" ")
    return f"{_PLURALS.get(head, head)}{' ' + rest if rest else ''}"


def _kind(node: dict, defs: dict, path: str = "") -> str:
    """The type of a schema and its allowed values, as a short phrase (e.g. ``integer ≥ 1 or null``); ``path``:
    the key's dotted path (it names the keys of a mapping keyed by name)."""
    if isinstance(node, dict) and node.get("$ref") == _NAME_REF:
        return "name"
    node = resolve(node, defs)
    if "const" in node:
        return md.code(md.literal(node["const"]))
    if "enum" in node:
        return "one of " + ", ".join(md.code(md.literal(value)) for value in node["enum"])
    if "anyOf" in node:
        return " or ".join(_kind(alternative, defs) for alternative in node["anyOf"])
    parts = []
    for type_ in _types(node) or ["any value"]:
        if type_ in ("integer", "number"):
            parts.append(type_ + _number_bounds(node))
        elif type_ == "string":
            details = [_count(node.get("minLength"), node.get("maxLength"), "character")]
            if "pattern" in node:
                details.append(f"matching {md.code(node['pattern'])}")
            details = [detail for detail in details if detail]
            parts.append("string" + (f" ({', '.join(details)})" if details else ""))
        elif type_ == "array":
            items = node.get("items")
            item = (
                "mapping"
                if isinstance(items, dict) and has_keys(items, defs)
                else _kind(items, defs)
                if isinstance(items, dict)
                else "value"
            )
            details = [
                _count(node.get("minItems"), node.get("maxItems"), "item"),
                "no repeats" if node.get("uniqueItems") else "",
            ]
            details = [detail for detail in details if detail]
            parts.append(f"list of {_plural(item)}" + (f" ({', '.join(details)})" if details else ""))
        elif type_ == "object":
            parts.append(_mapping_kind(node, defs, path))
        else:
            parts.append(type_)
    return " or ".join(parts)


def _mapping_kind(node: dict, defs: dict, path: str) -> str:
    entries = node.get("additionalProperties")
    size = _count(node.get("minProperties"), node.get("maxProperties"), "entry")
    if node.get("properties") or not isinstance(entries, dict):
        return "mapping" + (f" ({size})" if size else "")
    names = node.get("propertyNames", {})
    key = (
        "name"
        if isinstance(names, dict) and names.get("$ref") == _NAME_REF
        else _PLACEHOLDERS[path].strip("<>")
        if path in _PLACEHOLDERS
        else "string"
    )
    value = "mapping" if has_keys(entries, defs) else _kind(entries, defs)
    return f"mapping of {key} to {value}" + (f" ({size})" if size else "")


# ----------------------------------------------------------------------------------------------- the keys
def key(path: str, node: dict, defs: dict, *, required: bool = False, variant: str = "") -> Key:
    """The key at ``path`` whose schema is ``node``: its own description, and its own default or else that of the
    definition it refers to (as the validator fills it: :func:`hardneg.schema.validation.with_ref_defaults`)."""
    description = node.get("description", "") if isinstance(node, dict) else ""
    if isinstance(node, dict) and "default" not in node and isinstance(node.get("$ref"), str):
        node = {**defs.get(node["$ref"].removeprefix(_DEFS), {}), **node}  # the definition's default, if any
    default = md.literal(node["default"]) if isinstance(node, dict) and "default" in node else None
    return Key(path, " ".join(str(description).split()), _kind(node, defs, path), default, required, variant)


def _condition(test: dict) -> str:
    """The ``if:`` of a variant as text: ``adapter: synthetic``, or ``url`` for a key that must be present."""
    conditions = [
        f"{name}: {md.literal(rule['const']) if not isinstance(rule['const'], str) else rule['const']}"
        for name, rule in test.get("properties", {}).items()
        if isinstance(rule, dict) and "const" in rule
    ]
    return ", ".join(conditions + list(test.get("required", [])))


def _variants(node: dict) -> Iterator[tuple[str, dict]]:
    """The variants of a mapping: (label, schema) of each ``allOf`` item with ``if``/``then``, and of the mapping's
    own ``if``/``then``/``else``."""
    for part in node.get("allOf", []):
        if "if" in part and "then" in part:
            yield f"with {md.code(_condition(part['if']))}", part["then"]
    if "if" in node and "then" in node:
        yield f"with {md.code(_condition(node['if']))}", node["then"]
        if "else" in node:
            yield f"without {md.code(_condition(node['if']))}", node["else"]


def nested(
    node: dict, path: str, defs: dict, variant: str = "", intros: dict | None = None, known: frozenset = frozenset()
) -> Iterator[Key]:
    """The keys under ``path`` whose schema is ``node``, depth first in schema order. ``known``: keys of the
    mapping already listed (a variant that repeats them only restricts them); ``intros`` collects each variant's
    description, by variant."""
    node = resolve(node, defs)
    if not isinstance(node, dict):
        return
    if "array" in _types(node) and isinstance(node.get("items"), dict):
        yield from nested(node["items"], f"{path}[]", defs, variant, intros)
    required = set(node.get("required", []))
    properties = node.get("properties", {})
    for name, sub in properties.items():
        if name in known:
            continue
        key_path = f"{path}.{name}" if path else name
        yield key(key_path, sub, defs, required=name in required, variant=variant)
        yield from nested(sub, key_path, defs, variant, intros)
    entries = node.get("additionalProperties")
    if isinstance(entries, dict) and has_keys(entries, defs):
        placeholder = _PLACEHOLDERS.get(path.partition(".")[0], _DEFAULT_PLACEHOLDER)
        yield from nested(entries, f"{path}.{placeholder}", defs, variant, intros)
    for label, then in _variants(node):
        full = f"{md.code(path)} {label}" if not variant else f"{variant}, {md.code(path)} {label}"
        if intros is not None:
            intros[full] = then.get("description", "")
        yield from nested(then, path, defs, full, intros, known | set(properties))


def _method_variant(run: dict, name: str) -> dict:
    for part in run.get("allOf", []):
        if part.get("if", {}).get("properties", {}).get("method", {}).get("const") == name:
            return part["then"]
    raise ValueError(f"the schema has no run variant of method {name!r}")


def _role_kind(spec) -> str:
    """What a role names, as the configuration check holds it: any run, a dense run, or a run with a model."""
    run = (
        "run"
        if spec.provides not in DENSE_PROVIDES | MODEL_PROVIDES
        else f"{DENSE} run"
        if spec.provides in DENSE_PROVIDES
        else f"run with a trained model ({' or '.join(KIND_TITLES[kind].removesuffix(' runs') for kind in TRAINED)})"
    )
    if spec.provides == "miner":  # or an imported list in its place (hardneg.pipeline.config._single_role)
        return f"name of a {run}, or an imported list {{imported: <folder>}}"
    if not spec.many:
        return f"name of a {run}" if run != "run" else "run name"
    return f"list of names of {_plural_run(run)} ({_count(spec.min_count, spec.max_count, 'run')})"


def _plural_run(run: str) -> str:
    return "runs" if run == "run" else run.replace(" run", " runs", 1)


def method_keys(method: Method, run: dict, defs: dict) -> Iterator[Key]:
    """A method's input roles (``runs.<run>.inputs.<role>``) and its own parameter keys, as the composed schema
    declares them."""
    variant = f"method {method.name}"
    then = _method_variant(run, method.name)
    roles = then["properties"]["inputs"].get("properties", {})
    for role, spec in method.roles.items():
        node = roles.get(role, {})
        description = " ".join(str(node.get("description", "")).split())
        yield Key(f"{RUN_KEY}.inputs.{role}", description, _role_kind(spec), None, spec.required, variant)
    params = then["properties"]["params"]["properties"]
    for name in method.schema:
        path = f"{RUN_KEY}.params.{name}"
        yield key(path, params[name], defs, variant=variant)
        yield from nested(params[name], path, defs, variant)
