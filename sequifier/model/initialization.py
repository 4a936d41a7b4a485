"""Explicit initialization: per-group overrides inherited down the ingestion tree, and isolated seeds.

A policy maps (selector, target) to an initializer, target being `weight` or `bias`. A child
node's policy replaces only the (selector, target) pairs it names. A parameter takes the
initializer of the most specific selector matching its semantic group; parameters are
initialized once per identity (shared layers once).

Seeds: a node with `initialization_seed` starts a namespace; its descendants derive seeds
from SHA-256 over (version, namespace seed, relative branch path, phase), where phase is
`construct` (module constructors) or `initialize` (custom initializers). Without a namespace
everything uses the run's RNG stream, in construction order.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass
from typing import Iterator

import torch
from torch import nn

from sequifier.config.errors import UserError
from sequifier.config.schema import InitMethodConfig, InitTargetsConfig
from sequifier.model.parameters import matches, parameter_groups

SEED_VERSION = 1
Policy = dict[tuple[str, str], tuple[InitMethodConfig, str]]  # (selector, target) -> (initializer, config path)
FAN_BASED = ("xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal")


def derived_seed(namespace: int, path: str, phase: str) -> int:
    digest = hashlib.sha256(f"{SEED_VERSION}\x1f{namespace}\x1f{path}\x1f{phase}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & (2**63 - 1)


@dataclass(frozen=True)
class SeedScope:
    """Where a node's randomness comes from: a namespace seed and the path below it, or the run stream."""

    namespace: int | None = None
    path: str = ""

    def child(self, name: str, explicit_seed: int | None) -> SeedScope:
        if explicit_seed is not None:
            return SeedScope(explicit_seed, "")
        if self.namespace is None:
            return self
        return SeedScope(self.namespace, f"{self.path}/{name}" if self.path else name)

    @contextlib.contextmanager
    def constructing(self) -> Iterator[None]:
        if self.namespace is None:
            yield
            return
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derived_seed(self.namespace, self.path, "construct"))
            yield

    def generator(self) -> torch.Generator | None:
        if self.namespace is None:
            return None
        return torch.Generator().manual_seed(derived_seed(self.namespace, self.path, "initialize"))


def extend_policy(inherited: Policy, overrides: dict[str, InitTargetsConfig] | None, where: str) -> Policy:
    policy = dict(inherited)
    for selector, targets in (overrides or {}).items():
        for target in ("weight", "bias"):
            method = getattr(targets, target)
            if method is not None:
                policy[(selector, target)] = (method, f"{where}.initialization.{selector}.{target}")
    return policy


def initialize_module(module: nn.Module, policy: Policy, generator: torch.Generator | None, done: set[int]) -> None:
    """Apply `policy` to every parameter of `module` not initialized yet."""
    for name, group in parameter_groups(module).items():
        parameter = module.get_parameter(name)
        if id(parameter) in done:
            continue
        done.add(id(parameter))
        target = "bias" if name.endswith("bias") else "weight"
        chosen = _most_specific(policy, group, target)
        if chosen is not None:
            method, where = chosen
            with torch.no_grad():
                _apply(method, parameter, generator, where)


def _most_specific(policy: Policy, group: str, target: str) -> tuple[InitMethodConfig, str] | None:
    candidates = [
        (selector, value) for (selector, t), value in policy.items() if t == target and matches(selector, group)
    ]
    if not candidates:
        return None
    return max(candidates, key=lambda item: len(item[0]))[1]


def _apply(method: InitMethodConfig, tensor: torch.Tensor, generator: torch.Generator | None, where: str) -> None:
    name = method.method
    if name == "preserve":
        return
    if name in FAN_BASED and tensor.dim() < 2:
        raise UserError(
            where,
            (
                f"{name} needs weight matrices, but this group has a {tensor.dim()}-d parameter; "
                "use normal, uniform, zeros or ones"
            ),
        )
    init = nn.init
    if name == "zeros":
        init.zeros_(tensor)
    elif name == "ones":
        init.ones_(tensor)
    elif name in ("xavier_uniform", "xavier_normal"):
        getattr(init, name + "_")(tensor, gain=_or(method.gain, 1.0), generator=generator)
    elif name in ("kaiming_uniform", "kaiming_normal"):
        getattr(init, name + "_")(
            tensor,
            a=_or(method.a, 0.0),
            mode=method.mode or "fan_in",
            nonlinearity=method.nonlinearity or "leaky_relu",
            generator=generator,
        )
    elif name == "normal":
        init.normal_(tensor, mean=_or(method.mean, 0.0), std=_or(method.std, 0.02), generator=generator)
    elif name == "trunc_normal":
        std = _or(method.std, 0.02)
        init.trunc_normal_(
            tensor,
            mean=_or(method.mean, 0.0),
            std=std,
            a=_or(method.a, -2 * std),
            b=_or(method.b, 2 * std),
            generator=generator,
        )
    elif name == "uniform":
        init.uniform_(tensor, a=_or(method.a, -0.1), b=_or(method.b, 0.1), generator=generator)
    elif name == "constant":
        init.constant_(tensor, method.value)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
