"""Training and ranking methods, one package each; see :mod:`hardneg.methods.registry`."""

from hardneg.methods.registry import (
    DENSE,
    FUSION,
    LEXICAL,
    PROVIDES,
    RERANK,
    TRAINED,
    Method,
    Role,
    StepContext,
    dataclass_from,
    get,
    load_modules,
    methods,
    names,
    register,
)

__all__ = [
    "DENSE",
    "FUSION",
    "LEXICAL",
    "PROVIDES",
    "RERANK",
    "TRAINED",
    "Method",
    "Role",
    "StepContext",
    "dataclass_from",
    "get",
    "load_modules",
    "methods",
    "names",
    "register",
]
