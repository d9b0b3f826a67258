"""The configuration reference: every key of the configuration schema, with its type, default, allowed values
and description, as one Markdown page.

The page is made from the composed schema (:func:`composed_schema`: the schema file with the run variants of the
registered methods, as :func:`hardneg.pipeline.config.load_schema` composes it) and from the method registry, so it
says what the validator reads. The documentation site generates it at build time (``reference/configuration.md``),
and ``hardneg config-reference`` prints it.

Keys are named by dotted paths. An entry of a mapping keyed by name stands as a placeholder (``runs.<run>``,
``datasets.<name>``, ``downloads.<path>``, ``resources.<rule>``), an item of a list as ``[]``
(``summary.groups[].marker``). A key that holds only in one variant of its mapping (one dataset adapter, one
kind of download, one method) carries that variant (:attr:`Key.variant`).

Every key needs a description: :func:`missing_descriptions` lists the keys without one, and
:func:`config_reference` refuses to write a page that would leave one out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from hardneg import methods
from hardneg.errors import ConfigError
from hardneg.methods.registry import (
    DENSE,
    DENSE_PROVIDES,
    FUSION,
    KINDS,
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
_RUN = "runs.<run>"
_KIND_TITLES = {LEXICAL: "lexical runs", DENSE: "dense runs", RERANK: "re-ranking runs", FUSION: "fusion runs"}


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


@dataclass(frozen=True)
class Section:
    """A part of the page: a heading (``title``, ``anchor``, ``level``), an introduction in Markdown and the
    keys it lists."""

    title: str
    anchor: str
    level: int
    intro: str
    keys: tuple[Key, ...]


# ------------------------------------------------------------------------------------------------- the schema
def composed_schema(schema: dict | None = None) -> dict:
    """The configuration schema as written (default: the package's, :func:`hardneg.schema.validation.read_schema`)
    with the registered methods' run variants added (:func:`hardneg.pipeline.config.with_methods`). A schema that
    has its run variants already is returned as it is."""
    schema = read_schema() if schema is None else schema
    return schema if "allOf" in schema["$defs"]["run"] else with_methods(schema)


def _resolve(node: dict, defs: dict) -> dict:
    """``node`` with its ``$ref`` (into ``$defs``) replaced by the schema it names; the node's own keywords win."""
    while isinstance(node, dict) and "$ref" in node:
        target = defs[node["$ref"].removeprefix(_DEFS)]
        node = {**target, **{key: value for key, value in node.items() if key != "$ref"}}
    return node


def _types(node: dict) -> list[str]:
    types = node.get("type", [])
    return [types] if isinstance(types, str) else list(types)


def _has_keys(node: dict, defs: dict) -> bool:
    """Whether a schema declares keys of its own (directly, in its items, its entries or its variants)."""
    node = _resolve(node, defs)
    if not isinstance(node, dict):
        return False
    if node.get("properties") or node.get("allOf") or "then" in node:
        return True
    entries = node.get("additionalProperties")
    if isinstance(entries, dict) and _has_keys(entries, defs):
        return True
    return "array" in _types(node) and isinstance(node.get("items"), dict) and _has_keys(node["items"], defs)


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
    node = _resolve(node, defs)
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
                if isinstance(items, dict) and _has_keys(items, defs)
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
    value = "mapping" if _has_keys(entries, defs) else _kind(entries, defs)
    return f"mapping of {key} to {value}" + (f" ({size})" if size else "")


# ----------------------------------------------------------------------------------------------- the keys
def _key(path: str, node: dict, defs: dict, *, required: bool = False, variant: str = "") -> Key:
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


def _nested(
    node: dict, path: str, defs: dict, variant: str = "", intros: dict | None = None, known: frozenset = frozenset()
) -> Iterator[Key]:
    """The keys under ``path`` whose schema is ``node``, depth first in schema order. ``known``: keys of the
    mapping already listed (a variant that repeats them only restricts them); ``intros`` collects each variant's
    description, by variant."""
    node = _resolve(node, defs)
    if not isinstance(node, dict):
        return
    if "array" in _types(node) and isinstance(node.get("items"), dict):
        yield from _nested(node["items"], f"{path}[]", defs, variant, intros)
    required = set(node.get("required", []))
    properties = node.get("properties", {})
    for name, sub in properties.items():
        if name in known:
            continue
        key_path = f"{path}.{name}" if path else name
        yield _key(key_path, sub, defs, required=name in required, variant=variant)
        yield from _nested(sub, key_path, defs, variant, intros)
    entries = node.get("additionalProperties")
    if isinstance(entries, dict) and _has_keys(entries, defs):
        placeholder = _PLACEHOLDERS.get(path.partition(".")[0], _DEFAULT_PLACEHOLDER)
        yield from _nested(entries, f"{path}.{placeholder}", defs, variant, intros)
    for label, then in _variants(node):
        full = f"{md.code(path)} {label}" if not variant else f"{variant}, {md.code(path)} {label}"
        if intros is not None:
            intros[full] = then.get("description", "")
        yield from _nested(then, path, defs, full, intros, known | set(properties))


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
        else f"run with a trained model ({' or '.join(_KIND_TITLES[kind].removesuffix(' runs') for kind in TRAINED)})"
    )
    if spec.provides == "miner":  # or an imported list in its place (hardneg.pipeline.config._single_role)
        return f"name of a {run}, or an imported list {{imported: <folder>}}"
    if not spec.many:
        return f"name of a {run}" if run != "run" else "run name"
    return f"list of names of {_plural_run(run)} ({_count(spec.min_count, spec.max_count, 'run')})"


def _plural_run(run: str) -> str:
    return "runs" if run == "run" else run.replace(" run", " runs", 1)


def _method_keys(method: Method, run: dict, defs: dict) -> Iterator[Key]:
    """A method's input roles (``runs.<run>.inputs.<role>``) and its own parameter keys, as the composed schema
    declares them."""
    variant = f"method {method.name}"
    then = _method_variant(run, method.name)
    roles = then["properties"]["inputs"].get("properties", {})
    for role, spec in method.roles.items():
        node = roles.get(role, {})
        description = " ".join(str(node.get("description", "")).split())
        yield Key(f"{_RUN}.inputs.{role}", description, _role_kind(spec), None, spec.required, variant)
    params = then["properties"]["params"]["properties"]
    for name in method.schema:
        path = f"{_RUN}.params.{name}"
        yield _key(path, params[name], defs, variant=variant)
        yield from _nested(params[name], path, defs, variant)


def sections(schema: dict | None = None) -> list[Section]:
    """The page's sections, in order, from the configuration schema as written (default: the package's) and the
    registered methods (see :func:`composed_schema`): the top-level keys that hold no others, a section per
    top-level mapping (a subsection per variant: the dataset adapters, the two kinds of download), the keys of
    every run, the parameters each kind of run shares, and a section per method (its input roles and its own
    parameters)."""
    schema = composed_schema(schema)
    registry = methods.methods()
    defs, top = schema["$defs"], schema["properties"]
    required = set(schema.get("required", []))
    plain = [name for name, node in top.items() if not _has_keys(node, defs)]
    intro = "The keys at the top of a file that hold no others; each top-level mapping has its own section below."
    out = [
        Section(
            "Top-level keys",
            "top-level-keys",
            2,
            intro,
            tuple(_key(name, top[name], defs, required=name in required) for name in plain),
        )
    ]
    for name, node in top.items():
        if name in plain or name == "runs":
            continue
        intros: dict = {}
        keys = [_key(name, node, defs, required=name in required), *_nested(node, name, defs, intros=intros)]
        out.append(Section(md.code(name), md.anchor(name), 2, "", tuple(key for key in keys if not key.variant)))
        for variant, intro in intros.items():
            out.append(
                Section(
                    variant,
                    md.anchor(variant),
                    3,
                    md.prose(intro),
                    tuple(key for key in keys if key.variant == variant),
                )
            )
    run = _resolve(top["runs"]["additionalProperties"], defs)
    out.append(Section(md.code("runs"), "runs", 2, "", (_key("runs", top["runs"], defs, required="runs" in required),)))
    out.append(
        Section(
            "Keys of every run",
            "run-keys",
            3,
            md.prose(run.get("description", "")),
            tuple(
                _key(f"{_RUN}.{name}", node, defs, required=name in run.get("required", []))
                for name, node in run["properties"].items()
            ),
        )
    )
    for kind in KINDS:
        params = defs[f"{kind}_params"]
        param_keys = tuple(_nested(params, f"{_RUN}.params", defs, f"{_KIND_TITLES[kind]}"))
        methods_of_kind = ", ".join(md.link(name, f"method-{name}") for name, m in registry.items() if m.kind == kind)
        intro = md.prose(params.get("description", "")) + (
            f"\n\nMethods of this kind: {methods_of_kind}." if methods_of_kind else ""
        )
        out.append(
            Section(
                f"Parameters of every {_KIND_TITLES[kind].removesuffix('s')}", f"{kind}-params", 3, intro, param_keys
            )
        )
    overview = "\n".join(
        [
            "| Method | Kind | What it does |",
            "| --- | --- | --- |",
            *(
                f"| {md.link(name, f'method-{name}')} | {md.link(method.kind, f'{method.kind}-params')} | "
                f"{md.cell(method.summary)} |"
                for name, method in registry.items()
            ),
        ]
    )
    out.append(
        Section(
            "Methods",
            "methods",
            2,
            "A run's `method` names one of these. Each takes the input roles "
            "and the parameters of its section, beside the parameters its kind shares.\n\n" + overview,
            (),
        )
    )
    for name, method in registry.items():
        intro = (
            f"A {md.link(method.kind, f'{method.kind}-params')} method, declared in "
            f"{md.code(method.module or 'an unknown module')}: {md.prose(method.summary)}."
        )
        if not method.roles:
            intro += " It takes no input runs."
        for group in method.exclusive_roles:
            intro += f" A run names at most one of {' and '.join(md.code(f'inputs.{role}') for role in group)}."
        if not method.schema:
            intro += " It has no parameters of its own."
        out.append(Section(md.code(name), f"method-{name}", 3, intro, tuple(_method_keys(method, run, defs))))
    return out


def keys(schema: dict | None = None) -> list[Key]:
    """Every key the page lists, in page order, from the configuration schema as written (default: the package's)
    and the registered methods."""
    return [key for section in sections(schema) for key in section.keys]


def key_paths(schema: dict | None = None) -> list[str]:
    """For the configuration schema as written (default: the package's) and the registered methods: the dotted
    path of every key the page lists, each once, in page order (e.g. ``evaluation.measures``,
    ``runs.<run>.params.train.learning_rate``, ``datasets.<name>.num_docs``)."""
    return list(dict.fromkeys(key.path for key in keys(schema)))


def missing_descriptions(schema: dict | None = None) -> list[str]:
    """For the configuration schema as written (default: the package's) and the registered methods: the keys that
    have no description, each as its dotted path followed by its variant when it belongs to one
    (e.g. ``runs.<run>.params.k1 (method bm25)``); empty when every key has one."""
    return [key.where for key in keys(schema) if not key.description]


def _entry(key: Key) -> str:
    facts = [md.prose(key.kind)]
    if key.required:
        facts.append("**required**")
    if key.default is not None:
        facts.append(f"default {md.code(key.default)}")
    return f"{md.code(key.path)}\n:   {' · '.join(facts)}\n\n    {md.prose(key.description)}\n"


_PREAMBLE = """\
# Configuration reference

Every key of a hardneg configuration file, with its type, allowed values, default and meaning. This page is
generated from the configuration schema (`src/hardneg/schema/config.schema.yaml`) and the registered methods each
time the documentation is built, and `hardneg config-reference` prints it; `hardneg check-config` validates a file
against the same schema. How the files, runs and defaults fit together: [How a config works](../configuration.md).

How to read the keys:

- A key is written as its dotted path from the top of the file. An entry of a mapping keyed by name stands as a
  placeholder: `runs.<run>` is any run, `datasets.<name>` any dataset, `downloads.<path>` any download,
  `resources.<rule>` any rule; `[]` is any item of a list (`summary.groups[].marker`).
- **required**: the key must be given whenever its parent is. A default is the value a key left out takes, written
  as in a YAML file; a key with neither is optional, and its description says what leaving it out does.
- Bounds are intervals: `in [0, 1]` includes both ends, `in (0, 1]` excludes 0.
- A *name* is {name}
"""


def config_reference(schema: dict | None = None) -> str:
    """The configuration reference as one Markdown page, from the configuration schema as written (default: the
    package's) and the registered methods; the same schema and methods give the same text.

    Raises :class:`~hardneg.errors.ConfigError` naming every key that has no description."""
    schema = composed_schema(schema)
    parts = sections(schema)
    missing = [key for section in parts for key in section.keys if not key.description]
    if missing:
        raise ConfigError(
            missing[0].path,
            f"{len(missing)} key(s) of the configuration schema have no description "
            f"(the configuration reference describes every key): "
            f"{'; '.join(key.where for key in missing)}",
        )
    name = schema["$defs"]["name"]
    rule = (
        f"{md.prose(name.get('description', ''))}: at most {name['maxLength']} characters, matching "
        f"{md.code(name['pattern'])}."
    )
    lines = [_PREAMBLE.replace("{name}", rule)]
    for section in parts:
        lines.append(f"{'#' * section.level} {section.title} {{ #{section.anchor} }}\n")
        if section.intro:
            lines.append(f"{section.intro}\n")
        lines.extend(_entry(key) for key in section.keys)
    return "\n".join(lines).rstrip("\n") + "\n"
