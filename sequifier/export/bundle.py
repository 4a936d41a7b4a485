"""PT inference bundles: weights, an execution-only model config with the contract, and export metadata.

A bundle is a dict with exactly BUNDLE_KEYS, readable with `torch.load(weights_only=True)`:
everything but the state dict is plain dicts, lists, strings, numbers and booleans. It holds
no optimizer, paths, parts, plans, evaluation policy or dataset bindings. `read_bundle`
rebuilds the network from `model_config` alone.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from sequifier import __version__
from sequifier.atomic import atomic_path
from sequifier.config.errors import UserError
from sequifier.config.network import NetworkSpec
from sequifier.config.resolve import RunSpec
from sequifier.config.typed import ProblemList, build
from sequifier.data.safe_load import load_weights_only
from sequifier.export.contract import build_contract, check_contract
from sequifier.model.network import SequifierNetwork, build_network

ARTIFACT_TYPE = "sequifier_inference_bundle"
FORMAT_VERSION = 2  # 2: model_config holds the NetworkSpec
BUNDLE_KEYS = ("artifact_type", "format_version", "model_state_dict", "model_config", "export_metadata")
MIN_EXTRA_ELEMENTS = 2**24  # buffers a network may hold beyond its stored weights (position tables, ...)


def _plain(value: Any) -> Any:
    """Dataclass trees as JSON-shaped data: dicts, lists, str, int, float, bool, None."""
    return json.loads(json.dumps(value))


def model_config(network: SequifierNetwork, spec: RunSpec) -> dict[str, Any]:
    """What rebuilding and running the network needs: its execution-only NetworkSpec and the contract."""
    return {
        "network": _plain(asdict(spec.network.execution_only())),
        "contract": build_contract(network, spec, "network", "selectable"),
    }


def trace_sites(network: SequifierNetwork) -> list[str]:
    """Module names whose outputs are the network's stages (for forward hooks).

    The stages: ingestion, adapter, positions, layers, final norm, decoder.
    """
    sites = []
    for name in network.interfaces:
        sites += [f"interfaces.{name}.ingestion", f"interfaces.{name}.adapter"]
    sites += (
        ["backbone.position"]
        + [f"backbone.layers.{i}" for i in range(len(network.backbone.layers))]
        + ["backbone.final_norm"]
    )
    sites += [f"interfaces.{name}.decoder" for name in network.interfaces]
    return sites


def write_bundle(network: SequifierNetwork, spec: RunSpec, path: Path, kind: str, epoch: int) -> None:
    """Write the PT inference bundle of `network` to `path` atomically."""
    provenance = {
        "sequifier_version": __version__,
        "torch_version": str(torch.__version__),
        "model_name": spec.model_name,
        "kind": kind,
        "epoch": epoch,
        "exported_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    bundle = {
        "artifact_type": ARTIFACT_TYPE,
        "format_version": FORMAT_VERSION,
        "model_state_dict": {k: v.detach().cpu().clone() for k, v in network.state_dict().items()},
        "model_config": _plain(model_config(network, spec)),
        "export_metadata": _plain({"trace_sites": trace_sites(network), "provenance": provenance}),
    }
    with atomic_path(path) as temporary:
        torch.save(bundle, temporary)


def rebuild_network(config: dict[str, Any], where: str = "model_config") -> SequifierNetwork:
    """The network an execution-only model config describes, with freshly initialized weights."""
    problems = ProblemList()
    spec = build(NetworkSpec, config.get("network"), f"{where}.network", problems)
    problems.raise_if_any()
    return build_network(spec)


def _check_layout(bundle: Any, where: str) -> None:
    """The bundle's keys and the types of its parts."""
    if not isinstance(bundle, dict) or bundle.get("artifact_type") != ARTIFACT_TYPE:
        raise UserError(where, f"not a sequifier PT inference bundle (artifact_type {ARTIFACT_TYPE!r} expected)")
    if bundle.get("format_version") != FORMAT_VERSION:
        raise UserError(
            where,
            f"bundle format_version {bundle.get('format_version')!r} is not supported (this sequifier reads "
            f"{FORMAT_VERSION})",
        )
    if sorted(bundle) != sorted(BUNDLE_KEYS):
        missing, extra = sorted(set(BUNDLE_KEYS) - set(bundle)), sorted(set(bundle) - set(BUNDLE_KEYS))
        raise UserError(
            where, f"a bundle holds exactly {', '.join(BUNDLE_KEYS)}; missing {missing}, unexpected {extra}"
        )
    weights = bundle["model_state_dict"]
    if not isinstance(weights, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()
    ):
        raise UserError(where, "model_state_dict must map parameter names to tensors")
    config = bundle["model_config"]
    if not isinstance(config, dict) or not isinstance(config.get("network"), dict) or "contract" not in config:
        raise UserError(where, "model_config must be a mapping with network (a mapping) and contract")
    if not isinstance(bundle["export_metadata"], dict):
        raise UserError(where, "export_metadata must be a mapping")


def _check_weights(network: SequifierNetwork, weights: dict[str, torch.Tensor], where: str) -> None:
    """The weights are the network's (names and shapes), finite, and the network needs no more memory than they do."""
    expected = network.state_dict()
    missing, extra = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    if missing or extra:
        raise UserError(
            where, f"model_state_dict does not fit model_config: missing {missing[:3]}, unexpected {extra[:3]}"
        )
    for name, tensor in weights.items():
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise UserError(
                where,
                f"model_state_dict[{name!r}] has shape {list(tensor.shape)}, model_config says "
                f"{list(expected[name].shape)}",
            )
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise UserError(where, f"model_state_dict[{name!r}] holds NaN or infinite values")
    stored = sum(tensor.numel() for tensor in weights.values())
    needed = sum(t.numel() for t in [*network.parameters(), *network.buffers()])
    if needed > max(2 * stored, MIN_EXTRA_ELEMENTS):
        raise UserError(where, f"model_config describes buffers of {needed} values for {stored} stored weights")


def read_bundle(path: Path) -> tuple[SequifierNetwork, dict[str, Any], dict[str, Any]]:
    """Load a bundle: the rebuilt network with its weights (eval mode), its contract, and its export metadata.

    Everything is checked before the network is built for real: the layout, the contract, and the weights
    against a shape-only (meta device) build of the network described in model_config.
    """
    where = str(path)
    bundle = load_weights_only(path, "PT bundle")
    _check_layout(bundle, where)
    config = bundle["model_config"]
    check_contract(config["contract"], where)
    try:
        with torch.device("meta"):
            shapes = rebuild_network(config, f"{where}: model_config")
    except UserError:
        raise
    except Exception as error:  # values of the right types that describe no network
        raise UserError(
            where, f"model_config.network describes no buildable network ({' '.join(str(error).split())[:200]})"
        ) from None
    _check_interface(config["network"], config["contract"], where)
    _check_weights(shapes, bundle["model_state_dict"], where)
    network = rebuild_network(config, f"{where}: model_config")
    network.load_state_dict(bundle["model_state_dict"])
    return network.eval(), config["contract"], bundle["export_metadata"]


def _check_interface(network: dict[str, Any], contract: dict[str, Any], where: str) -> None:
    """The contract's interface is one of model_config's (already built), reading and predicting the same columns."""
    interface = network["interfaces"].get(contract["interface"])
    if interface is None:
        raise UserError(where, f"the contract's interface {contract['interface']!r} is not in model_config")
    for field in ("input_columns", "target_columns"):
        if sorted(interface["config"][field]) != sorted(contract[field]):
            raise UserError(where, f"the contract's {field} are not the ones model_config describes")
