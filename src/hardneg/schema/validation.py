"""JSON-schema validation that fills defaults, and errors that name the dotted key at fault.

The schema is ``config.schema.yaml`` of this package (:func:`read_schema`). Its ``default:`` values are the only
defaults: the validator writes them into the instance as it validates. Errors become one
:class:`~hardneg.errors.ConfigError` naming the key (:func:`describe`).
"""

from __future__ import annotations

import copy
import functools
import math
import os
from importlib import resources

import yaml
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match

from hardneg.errors import ConfigError
from hardneg.schema.names import NAME_PATTERN, NAME_RULE, QUOTE_LIMIT, quoted

SCHEMA_FILE = "config.schema.yaml"
# libyaml's parser, where PyYAML was built with it (its wheels are): the schema is read by every Snakemake run and
# every command that checks a config, and the pure-Python parser takes a tenth of a second over it.
_SCHEMA_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_schema(path: str | os.PathLike | None = None) -> dict:
    """The configuration schema as written: the package's ``config.schema.yaml`` (read with
    :mod:`importlib.resources`, so an installed package finds it), or the file at ``path``. The run variants of
    the registered methods are not in it (:func:`hardneg.pipeline.config.load_schema` adds them)."""
    if path is None:
        return copy.deepcopy(_package_schema())
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=_SCHEMA_LOADER)


@functools.cache
def _package_schema() -> dict:
    """The package's schema, parsed once per process (a config is validated several times while Snakemake
    builds a DAG, and parsing the file takes longer than validating); callers get copies."""
    text = resources.files("hardneg.schema").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    return yaml.load(text, Loader=_SCHEMA_LOADER)


def _with_defaults(validator_class):
    check_properties = validator_class.VALIDATORS["properties"]

    def fill_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from check_properties(validator, properties, instance, schema)

    return validators.extend(validator_class, {"properties": fill_defaults})


def _variants(validator, spec, instance, schema):
    """Keyword ``x-variants`` (see :func:`with_dispatched_variants`): the ``allOf`` of ``if``/``then`` variants it
    stands for, applied by a lookup of the instance's discriminating property where it holds one of the variants'
    strings (the only variant whose ``if`` holds, or none), else item by item as ``allOf`` does."""
    value = instance.get(spec["property"]) if isinstance(instance, dict) else None
    if isinstance(value, str):
        index = spec["index"].get(value)
        if index is not None:
            yield from validator.descend(instance, spec["allOf"][index]["then"], schema_path=index)
        return
    yield from validator.VALIDATORS["allOf"](validator, spec["allOf"], instance, schema)


# Draft 2020-12, filling each missing property that has a ``default:`` before checking the properties, with the
# ``x-variants`` keyword of :func:`with_dispatched_variants`.
_Validator = validators.extend(_with_defaults(Draft202012Validator), {"x-variants": _variants})


def _discriminator(variants) -> str | None:
    """The property whose string constant each ``if`` of ``variants`` tests, alone, when they all test one."""
    names = set()
    for variant in variants:
        test = variant.get("if") if isinstance(variant, dict) else None
        if not (
            isinstance(test, dict)
            and set(test) == {"properties"}
            and set(variant) == {"if", "then"}
            and len(test["properties"]) == 1
        ):
            return None
        ((name, condition),) = test["properties"].items()
        if not (isinstance(condition, dict) and set(condition) == {"const"} and isinstance(condition["const"], str)):
            return None
        names.add(name)
    return names.pop() if len(names) == 1 and len(variants) > 1 else None


def with_dispatched_variants(node):
    """A copy of a schema in which every ``allOf`` of ``if``/``then`` variants on one property's string constants
    (a run's ``method``, a dataset's ``adapter``) becomes keyword ``x-variants``: the same errors, but found by a
    lookup rather than by trying each ``if`` in turn, which made validation grow with the number of methods."""
    if isinstance(node, list):
        return [with_dispatched_variants(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: with_dispatched_variants(value) for key, value in node.items()}
    prop = _discriminator(node.get("allOf")) if isinstance(node.get("allOf"), list) else None
    if prop is not None:
        variants = node.pop("allOf")
        index = {variant["if"]["properties"][prop]["const"]: i for i, variant in reversed(list(enumerate(variants)))}
        if len(index) == len(variants):  # one variant per value; otherwise allOf applies them all, as written
            node["x-variants"] = {"property": prop, "index": index, "allOf": variants}
        else:
            node["allOf"] = variants
    return node


def with_ref_defaults(schema: dict) -> dict:
    """A copy of ``schema`` in which a sub-schema that is a reference into its ``$defs`` (``{$ref: "#/$defs/x"}``)
    and has no ``default:`` of its own carries the default of ``$defs/x``, if that has one: the validator fills a
    missing key from the default beside it, so a key declared by reference gets its definition's default too."""
    definitions = schema.get("$defs", {})

    def walk(node):
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        node = {key: walk(value) for key, value in node.items()}
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and "default" not in node:
            target = definitions.get(ref[len("#/$defs/") :], {})
            if isinstance(target, dict) and "default" in target:
                node["default"] = copy.deepcopy(target["default"])
        return node

    return walk(schema)


def validator_for(schema: dict):
    """The validator of ``schema``: JSON Schema draft 2020-12 that writes every missing property's default into the
    instance as it validates, a key declared by reference included (:func:`with_ref_defaults`); variants on one
    property are found by lookup (:func:`with_dispatched_variants`)."""
    return _Validator(with_dispatched_variants(with_ref_defaults(schema)))


def non_finite_error(instance, path: tuple = ()) -> ValidationError | None:
    """The first float of ``instance``, at any depth and under any key (declared by the schema or not), that is
    NaN or infinite (YAML's ``.nan``, ``.inf``, or a literal too large for a float), as an error at its key; None
    when every number is finite. JSON Schema's ``minimum``/``maximum`` let NaN through (it compares false), and no
    stage can use such a value."""
    if isinstance(instance, float) and not math.isfinite(instance):
        return ValidationError(
            f"expected a finite number, got {instance!r}", validator="finite", path=path, instance=instance
        )
    children = (
        instance.items() if isinstance(instance, dict) else enumerate(instance) if isinstance(instance, list) else ()
    )
    for key, value in children:
        found = non_finite_error(value, path + (key,))
        if found is not None:
            return found
    return None


def first_error(validator, instance):
    """The error :func:`describe` reports for ``instance``, or None when it is valid: a number that is not finite
    (:func:`non_finite_error`) first, else the deepest schema error."""
    found = non_finite_error(instance)
    if found is not None:
        return found
    return best_match(validator.iter_errors(instance), key=lambda e: -len(e.absolute_path))


def first_error_of(validator, value, key: str):
    """:func:`first_error` of ``value`` as the root's property ``key`` (checked against that property's schema,
    its defaults filled in place), the error's path starting at ``key``."""
    found = non_finite_error(value, (key,))
    if found is not None:
        return found
    errors = validator.descend(value, validator.schema["properties"][key], path=key, schema_path=key)
    return best_match(errors, key=lambda e: -len(e.absolute_path))


def _dotted(parts) -> str:
    return ".".join(str(p) for p in parts) or "<root>"


def describe(error) -> ConfigError:
    """A jsonschema validation error as one :class:`ConfigError` naming the dotted key at fault."""
    path = list(error.absolute_path)
    validator, instance, schema = error.validator, error.instance, error.schema
    if "propertyNames" in error.absolute_schema_path or (
        validator == "pattern" and error.validator_value == NAME_PATTERN
    ):
        key = path + [instance] if "propertyNames" in error.absolute_schema_path else path
        return ConfigError(
            _dotted(key),
            f"invalid name {quoted(instance)}: a name becomes a file name, so it may hold only {NAME_RULE}",
        )
    if validator == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(k for k in instance if k not in allowed)
        dotted = _dotted(path + extra[:1])
        hint = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
        return ConfigError(dotted, f"unknown key{hint}")
    if validator == "required":
        missing = next((k for k in error.validator_value if k not in instance), "?")
        return ConfigError(_dotted(path + [missing]), "required key is missing")
    if validator == "type":
        return ConfigError(
            _dotted(path), f"expected {error.validator_value}, got {quoted(instance)} ({type(instance).__name__})"
        )
    if validator in ("minItems", "maxItems") and isinstance(instance, list) and "description" in schema:
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        count = f"exactly {low}" if low == high else f"at least {low}" if high is None else f"{low} to {high}"
        return ConfigError(_dotted(path), f"expected {count} entries ({schema['description']}), got {len(instance)}")
    if validator in ("enum", "const"):
        allowed = error.validator_value if validator == "enum" else [error.validator_value]
        return ConfigError(_dotted(path), f"must be one of {', '.join(map(str, allowed))}; got {quoted(instance)}")
    if len(error.message) > 2 * QUOTE_LIMIT:  # jsonschema's own message quotes the whole value
        return ConfigError(
            _dotted(path), f"{quoted(instance)} fails {error.validator!r}: {quoted(error.validator_value)}"
        )
    return ConfigError(_dotted(path), error.message)


def validate_fragment(value: dict, fragment: dict, schema: dict, where: str) -> dict:
    """A copy of ``value`` validated against ``fragment`` (a sub-schema whose ``$ref`` point into ``schema``'s
    ``$defs``), defaults filled. Errors name ``<where>.<key>``."""
    value = copy.deepcopy(value)
    validator = validator_for({**fragment, "$defs": schema["$defs"]})
    found = first_error(validator, value)
    if found is not None:
        error = describe(found)
        raise ConfigError(f"{where}.{error.key}" if error.key != "<root>" else where, error.message)
    return value


def validate_dataset(dataset: dict, *, where: str = "dataset", schema: dict | None = None) -> dict:
    """A copy of one dataset's config (an entry of ``datasets``) validated against the schema, every missing key
    filled with its schema default. Errors name ``<where>.<key>``."""
    schema = schema or read_schema()
    return validate_fragment(dataset, {"$ref": "#/$defs/dataset"}, schema, where)
