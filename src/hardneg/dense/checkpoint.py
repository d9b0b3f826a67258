"""Training checkpoints that are read without unpickling anything.

A checkpoint is two files in the checkpoint folder:

* ``tensors-<step>.safetensors``: every tensor and array of the state (model, optimiser, random-number states,
  the epoch's batches, arrays in the states of method, sampler and callbacks), in the safetensors format;
* ``state.json``: everything else (format, fingerprint, step, log rows, the other states), each tensor replaced
  by a reference into the tensor file, with the tensor file's name and SHA-256.

:func:`save_checkpoint` writes the tensor file, then ``state.json`` (each atomically; ``state.json`` last, so it
always names a complete tensor file), then removes older tensor files. :func:`load_checkpoint` parses
``state.json`` with :mod:`json`, and opens the tensor file only when the format and the fingerprint match and
the file's SHA-256 is the recorded one; safetensors holds raw numbers, so reading a checkpoint runs no code
from it. Anything else (another configuration, another format, a missing or altered tensor file, a pickled
``state.pt`` of an older format) is ignored with a logged reason: a checkpoint only saves time, and training
from the start gives the same result.

The state may hold ``dict`` (any keys JSON or this encoding can hold), ``list``, ``tuple``, ``str``, ``int``,
``float`` (NaN and infinities included), ``bool``, ``None``, NumPy scalars and arrays of numbers, and torch
tensors; each comes back with its type (a tuple as a tuple, an integer key as an integer).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path

import numpy as np
import torch

from hardneg.io.atomic import atomic_path

log = logging.getLogger(__name__)

STATE = "state.json"
LEGACY = "state.pt"  # pickled checkpoints of format 2 and before: never read
_TENSORS = re.compile(r"tensors-(\d+)\.safetensors")


class _Encoder:
    """Splits a state into a JSON-able tree and a flat dict of tensors (named ``t<n>``)."""

    def __init__(self) -> None:
        self.tensors: dict[str, torch.Tensor] = {}

    def _store(self, tensor: torch.Tensor) -> str:
        name = f"t{len(self.tensors)}"
        # a fresh CPU copy: safetensors refuses tensors that share memory (tied weights)
        self.tensors[name] = tensor.detach().to("cpu", copy=True).contiguous()
        return name

    def encode(self, value, where: str = "state"):
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, np.generic):  # before int and float: np.float64 is a float
            return {"$scalar": value.dtype.str, "value": value.item()}
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            return float(value)
        if isinstance(value, torch.Tensor):
            return {"$tensor": self._store(value)}
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "biuf":
                raise TypeError(f"{where}: a checkpoint holds arrays of numbers, not of {value.dtype}")
            return {"$array": self._store(torch.from_numpy(np.ascontiguousarray(value)))}
        if isinstance(value, tuple):
            return {"$tuple": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            if all(isinstance(k, str) and not k.startswith("$") for k in value):
                return {k: self.encode(v, f"{where}.{k}") for k, v in value.items()}
            return {"$items": [[self.encode(k, where), self.encode(v, f"{where}[{k!r}]")] for k, v in value.items()]}
        raise TypeError(
            f"{where}: a checkpoint cannot hold a {type(value).__name__} (JSON values, NumPy numbers "
            f"and arrays, and torch tensors only)"
        )


def _decode(value, tensors: dict):
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if not isinstance(value, dict):
        return value
    if "$tensor" in value:
        return tensors[value["$tensor"]]
    if "$array" in value:
        return tensors[value["$array"]].numpy()
    if "$scalar" in value:
        return np.dtype(value["$scalar"]).type(value["value"])
    if "$tuple" in value:
        return tuple(_decode(v, tensors) for v in value["$tuple"])
    if "$items" in value:
        return {_decode(k, tensors): _decode(v, tensors) for k, v in value["$items"]}
    return {k: _decode(v, tensors) for k, v in value.items()}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def save_checkpoint(folder: str | os.PathLike, state: dict, *, fingerprint: str, format: int, step: int) -> None:
    """Write ``state`` (see the module docstring for what it may hold) as the checkpoint of ``step`` in
    ``folder``; ``fingerprint`` and ``format`` are what :func:`load_checkpoint` must find to resume it."""
    from safetensors.torch import save_file  # safetensors (torch): imported only where weights are read or written

    folder = Path(folder)
    encoder = _Encoder()
    tree = encoder.encode(state)
    tensors_path = folder / f"tensors-{step}.safetensors"
    with atomic_path(tensors_path) as tmp:
        save_file(encoder.tensors, str(tmp))
    header = {
        "format": format,
        "fingerprint": fingerprint,
        "step": step,
        "tensors": tensors_path.name,
        "tensors_sha256": _sha256(tensors_path),
    }
    with atomic_path(folder / STATE) as tmp:
        tmp.write_text(json.dumps({**header, "state": tree}), encoding="utf-8")
    for path in folder.glob("tensors-*.safetensors"):
        if path != tensors_path:
            path.unlink(missing_ok=True)


def load_checkpoint(folder: str | os.PathLike, *, fingerprint: str, format: int) -> dict | None:
    """The state saved in ``folder`` by :func:`save_checkpoint` with this ``fingerprint`` and ``format``; None
    (and a logged reason) when there is none, or when it cannot be trusted (see the module docstring)."""
    from safetensors.torch import load_file  # safetensors (torch): imported only where weights are read or written

    folder = Path(folder)
    if (folder / LEGACY).exists():
        log.warning("ignoring %s: a pickled checkpoint of an older format, which is never loaded", folder / LEGACY)
    state_path = folder / STATE
    if not state_path.exists():
        return None

    def ignore(reason: str) -> None:
        log.warning("ignoring checkpoint %s: %s; training starts from the beginning", state_path, reason)

    try:
        saved = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        ignore(f"unreadable ({error})")
        return None
    if not isinstance(saved, dict) or saved.get("format") != format:
        ignore(f"another checkpoint format (this trainer reads format {format})")
        return None
    if saved.get("fingerprint") != fingerprint:
        ignore("it belongs to another configuration")
        return None
    name = saved.get("tensors")
    if not isinstance(name, str) or not _TENSORS.fullmatch(name):
        ignore(f"it names no tensor file of this folder ({name!r})")
        return None
    tensors_path = folder / name
    if not tensors_path.is_file():
        ignore(f"its tensor file {name} is missing")
        return None
    if _sha256(tensors_path) != saved.get("tensors_sha256"):
        ignore(f"its tensor file {name} is not the one it was saved with (SHA-256 differs)")
        return None
    try:
        tensors = load_file(str(tensors_path))
        state = _decode(saved["state"], tensors)
    except Exception as error:  # a malformed file: safetensors and the decoder only parse, never execute
        ignore(f"its tensor file {name} cannot be read ({type(error).__name__}: {error})")
        return None
    return state


def discard_checkpoint(folder: str | os.PathLike) -> None:
    """Remove the checkpoint in ``folder`` (``state.json`` first, so no half-removed checkpoint is resumed), and
    a pickled ``state.pt`` of an older format."""
    folder = Path(folder)
    (folder / STATE).unlink(missing_ok=True)
    for path in folder.glob("tensors-*.safetensors"):
        path.unlink(missing_ok=True)
    (folder / LEGACY).unlink(missing_ok=True)
