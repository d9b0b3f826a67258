"""The configuration reference: every key of the configuration schema, with its type, default, allowed values
and description, as one Markdown page.

The page is made from the composed schema (:func:`hardneg.pipeline.config_keys.composed_schema`: the schema file
with the run variants of the registered methods, as :func:`hardneg.pipeline.config.load_schema` composes it) and
from the method registry, so it says what the validator reads. The documentation site generates it at build time
(``reference/configuration.md``), and ``hardneg config-reference`` prints it. This module lays the page out: its
sections (:func:`sections`: one per top-level mapping and per variant, the keys of every run, the parameters each
kind of run shares, one per method) and their Markdown; the keys each section lists, and how a key is named and
described, come from :mod:`hardneg.pipeline.config_keys`.

Every key needs a description: :func:`missing_descriptions` lists the keys without one, and
:func:`config_reference` refuses to write a page that would leave one out.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardneg import methods
from hardneg.errors import ConfigError
from hardneg.methods.registry import KINDS
from hardneg.pipeline import config_keys
from hardneg.pipeline import reference_markdown as md
from hardneg.pipeline.config_keys import KIND_TITLES, RUN_KEY, Key, composed_schema


@dataclass(frozen=True)
class Section:
    """A part of the page: a heading (``title``, ``anchor``, ``level``), an introduction in Markdown and the
    keys it lists."""

    title: str
    anchor: str
    level: int
    intro: str
    keys: tuple[Key, ...]


def sections(schema: dict | None = None) -> list[Section]:
    """The page's sections, in order, from the configuration schema as written (default: the package's) and the
    registered methods (see :func:`hardneg.pipeline.config_keys.composed_schema`): the top-level keys that hold no
    others, a section per top-level mapping (a subsection per variant: the dataset adapters, the two kinds of
    download), the keys of every run, the parameters each kind of run shares, and a section per method (its input
    roles and its own parameters)."""
    schema = composed_schema(schema)
    registry = methods.methods()
    defs, top = schema["$defs"], schema["properties"]
    required = set(schema.get("required", []))
    plain = [name for name, node in top.items() if not config_keys.has_keys(node, defs)]
    intro = "The keys at the top of a file that hold no others; each top-level mapping has its own section below."
    out = [
        Section(
            "Top-level keys",
            "top-level-keys",
            2,
            intro,
            tuple(config_keys.key(name, top[name], defs, required=name in required) for name in plain),
        )
    ]
    for name, node in top.items():
        if name in plain or name == "runs":
            continue
        intros: dict = {}
        keys = [
            config_keys.key(name, node, defs, required=name in required),
            *config_keys.nested(node, name, defs, intros=intros),
        ]
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
    run = config_keys.resolve(top["runs"]["additionalProperties"], defs)
    out.append(
        Section(
            md.code("runs"), "runs", 2, "", (config_keys.key("runs", top["runs"], defs, required="runs" in required),)
        )
    )
    out.append(
        Section(
            "Keys of every run",
            "run-keys",
            3,
            md.prose(run.get("description", "")),
            tuple(
                config_keys.key(f"{RUN_KEY}.{name}", node, defs, required=name in run.get("required", []))
                for name, node in run["properties"].items()
            ),
        )
    )
    for kind in KINDS:
        params = defs[f"{kind}_params"]
        param_keys = tuple(config_keys.nested(params, f"{RUN_KEY}.params", defs, f"{KIND_TITLES[kind]}"))
        methods_of_kind = ", ".join(md.link(name, f"method-{name}") for name, m in registry.items() if m.kind == kind)
        intro = md.prose(params.get("description", "")) + (
            f"\n\nMethods of this kind: {methods_of_kind}." if methods_of_kind else ""
        )
        out.append(
            Section(
                f"Parameters of every {KIND_TITLES[kind].removesuffix('s')}", f"{kind}-params", 3, intro, param_keys
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
        out.append(
            Section(md.code(name), f"method-{name}", 3, intro, tuple(config_keys.method_keys(method, run, defs)))
        )
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
