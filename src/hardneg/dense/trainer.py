"""The trainer every method shares.

AdamW or LAMB (``pytorch_optimizer``), linear warm-up then linear decay, gradient accumulation, gradient
clipping, fp16/bf16 autocast and gradient checkpointing on GPU, seeded data order, periodic checkpoints with
resume, and a per-step log of loss and learning rate.

Resume: a checkpoint holds the model, optimiser, scheduler and random-number states and the number of
micro-batches done. Batches are drawn from a generator seeded by (seed, epoch, batch index), so a resumed
run skips the batches already seen and continues exactly as an uninterrupted run would.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from hardneg.atomic import atomic_path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 1e-4
    optimizer: str = "adamw"  # adamw | lamb
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    grad_accumulation: int = 1
    max_grad_norm: float | None = 1.0
    precision: str = "fp32"  # fp32 | fp16 | bf16 (autocast on GPU)
    gradient_checkpointing: bool = False
    checkpoint_every: int = 100  # optimiser steps
    log_every: int = 10
    seed: int = 0


def resolve_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def make_optimizer(params, config: TrainConfig):
    decay, no_decay = [], []
    for name, param in params:
        if param.requires_grad:
            (no_decay if param.ndim < 2 or "norm" in name.lower() else decay).append(param)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    if config.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=config.learning_rate)
    if config.optimizer == "lamb":
        from pytorch_optimizer import Lamb

        return Lamb(groups, lr=config.learning_rate)
    raise ValueError(f"unknown optimizer {config.optimizer!r}")


class Trainer:
    def __init__(self, model: torch.nn.Module, method, sampler, config: TrainConfig, *,
                 checkpoint_dir: str | os.PathLike, fingerprint: str, device: str = "auto", callbacks=()):
        self.model, self.method, self.sampler, self.config = model, method, sampler, config
        self.checkpoint_path = Path(checkpoint_dir) / "state.pt"
        self.fingerprint = fingerprint  # a checkpoint of another configuration is never resumed
        self.device = resolve_device(device)
        self.callbacks = list(callbacks)
        self.precision = config.precision
        if self.device.type != "cuda" and self.precision != "fp32":
            log.warning("precision %s needs a GPU; training in fp32 on %s", self.precision, self.device)
            self.precision = "fp32"

    def _autocast(self):
        if self.precision == "fp32":
            return nullcontext()
        dtype = torch.float16 if self.precision == "fp16" else torch.bfloat16
        return torch.autocast(device_type=self.device.type, dtype=dtype)

    def _save(self, state: dict) -> None:
        with atomic_path(self.checkpoint_path) as tmp:
            torch.save(state, tmp)
        log.info("checkpoint at step %d (%s)", state["step"], self.checkpoint_path)

    def _load(self):
        if not self.checkpoint_path.exists():
            return None
        state = torch.load(self.checkpoint_path, map_location="cpu", weights_only=False)
        if state.get("fingerprint") != self.fingerprint:
            log.warning("ignoring checkpoint %s: it belongs to another configuration", self.checkpoint_path)
            return None
        return state

    def fit(self) -> list[dict]:
        """Train; return the per-step log (step, epoch, loss, lr, seconds and the method's statistics)."""
        config, model = self.config, self.model
        torch.manual_seed(config.seed)
        model.to(self.device)
        if config.gradient_checkpointing and self.device.type == "cuda":
            for encoder in (model.query_encoder, model.doc_encoder):
                if encoder is not None and hasattr(encoder, "gradient_checkpointing_enable"):
                    encoder.gradient_checkpointing_enable()
        epochs = [self.sampler.batches(e) for e in range(config.epochs)]
        total_micro = sum(len(b) for b in epochs)
        total_steps = max(1, math.ceil(total_micro / config.grad_accumulation))
        optimizer = make_optimizer(model.named_parameters(), config)
        from transformers import get_linear_schedule_with_warmup

        scheduler = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * total_steps), total_steps)
        scaler = torch.amp.GradScaler("cuda", enabled=self.precision == "fp16")
        rows: list[dict] = []
        done_micro, step = 0, 0
        state = self._load()
        if state is not None:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            scaler.load_state_dict(state["scaler"])
            torch.set_rng_state(state["rng"])
            if torch.cuda.is_available() and state.get("cuda_rng") is not None:
                torch.cuda.set_rng_state_all(state["cuda_rng"])
            done_micro, step, rows = state["micro"], state["step"], state["log"]
            log.info("resuming from step %d of %d", step, total_steps)
        model.train()
        from tqdm import tqdm

        progress = tqdm(total=total_steps, initial=step, file=sys.stderr, mininterval=10, desc="training")
        started = time.perf_counter() - (rows[-1]["seconds"] if rows else 0.0)
        micro, pending, pending_stats = 0, [], []
        optimizer.zero_grad(set_to_none=True)
        for epoch, batches in enumerate(epochs):
            for index, queries in enumerate(batches):
                micro += 1
                if micro <= done_micro:
                    continue
                batch = self.method.make_batch(queries, np.random.default_rng([config.seed, epoch, index]))
                with self._autocast():
                    loss, stats = self.method.loss(model, batch, self.device)
                backward_started = time.perf_counter()
                scaler.scale(loss / config.grad_accumulation).backward()
                stats = {**stats, "backward_seconds": time.perf_counter() - backward_started}
                pending.append(float(loss.detach()))
                pending_stats.append(stats)
                if micro % config.grad_accumulation and micro != total_micro:
                    continue
                if config.max_grad_norm:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                scaler.step(optimizer)
                scaler.update()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
                row = {"step": step, "epoch": epoch, "loss": float(np.mean(pending)),
                       "lr": float(scheduler.get_last_lr()[0]), "seconds": time.perf_counter() - started}
                for key in pending_stats[0]:
                    row[key] = float(np.mean([s[key] for s in pending_stats]))
                rows.append(row)
                pending, pending_stats = [], []
                progress.update(1)
                if step % config.log_every == 0 or step == total_steps:
                    log.info("step %d/%d epoch %d loss %.4f lr %.2e", step, total_steps, epoch, row["loss"], row["lr"])
                for callback in self.callbacks:
                    callback(self, step)
                if config.checkpoint_every and step % config.checkpoint_every == 0 and step < total_steps:
                    self._save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(),
                                "rng": torch.get_rng_state(),
                                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                                "micro": micro, "step": step, "log": rows, "fingerprint": self.fingerprint})
        progress.close()
        model.eval()
        return rows

    def discard_checkpoint(self) -> None:
        self.checkpoint_path.unlink(missing_ok=True)
