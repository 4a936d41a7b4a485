"""PT inference bundles: weights, an execution-only model config with the contracts, and export metadata.

A bundle is a dict with exactly BUNDLE_KEYS, readable with `torch.load(weights_only=True)`:
everything but the state dict is plain dicts, lists, strings, numbers and booleans. It holds
no optimizer, paths, parts, plans, evaluation policy or dataset bindings. A bundle is run-wide:
it holds the whole network and one contract per interface; `read_bundle` rebuilds the network
from `model_config` alone and serves the interface inference chooses.
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
from sequifier.config.errors import UserError, did_you_mean
from sequifier.config.network import NetworkSpec
from sequifier.config.resolve import RunSpec
from sequifier.config.typed import ProblemList, build
from sequifier.data.safe_load import load_weights_only
from sequifier.export.contract import build_contract, check_contract
from sequifier.model.network import SequifierNetwork, build_network

ARTIFACT_TYPE = "sequifier_inference_bundle"
FORMAT_VERSION = 3  # 2: model_config holds the NetworkSpec and one contract; 3: a contract per interface
READABLE_VERSIONS = (2, 3)
BUNDLE_KEYS = ("artifact_type", "format_version", "model_state_dict", "model_config", "export_metadata")
MIN_EXTRA_ELEMENTS = 2**24  # buffers a network may hold beyond its stored weights (position tables, ...)


def _plain(value: Any) -> Any:
    """Dataclass trees as JSON-shaped data: dicts, lists, str, int, float, bool, None."""
    return json.loads(json.dumps(value))


def model_config(network: SequifierNetwork, spec: RunSpec) -> dict[str, Any]:
    """What rebuilding and running the network needs: its execution-only NetworkSpec and a contract per interface.

    An interface's contract describes the data of the first dataset the run trains through it.
    """
    contracts = {}
    for dataset in spec.config.dataset_training:
        view = spec.dataset_view(dataset)
        if view.interface_name not in contracts:
            contracts[view.interface_name] = build_contract(network, view, "network", "selectable")
    return {"network": _plain(asdict(spec.network.execution_only())), "contracts": contracts}


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
    if bundle.get("format_version") not in READABLE_VERSIONS:
        raise UserError(
            where,
            f"bundle format_version {bundle.get('format_version')!r} is not supported (this sequifier reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})",
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
    if not isinstance(config, dict) or not isinstance(config.get("network"), dict):
        raise UserError(where, "model_config must be a mapping with network (a mapping)")
    if bundle["format_version"] == 2:
        if "contract" not in config:
            raise UserError(where, "model_config of a format 2 bundle must hold contract")
    elif not isinstance(config.get("contracts"), dict) or not config["contracts"]:
        raise UserError(where, "model_config must hold contracts, a mapping of interface names to contracts")
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


def read_bundle(
    path: str | Path, interface: str | None = None
) -> tuple[SequifierNetwork, dict[str, Any], dict[str, Any]]:
    """Load a bundle: the rebuilt network with its weights (eval mode), the contract of `interface`, export metadata.

    `interface` may be None when the bundle serves one interface. Everything is checked before the network
    is built for real: the layout, the contracts, and the weights against a shape-only (meta device) build
    of the network described in model_config.
    """
    path = Path(path)
    where = str(path)
    bundle = load_weights_only(path, "PT bundle")
    _check_layout(bundle, where)
    config = bundle["model_config"]
    contracts = _contracts(bundle, where)
    contract = _chosen(contracts, interface, where)
    try:
        with torch.device("meta"):
            shapes = rebuild_network(config, f"{where}: model_config")
    except UserError:
        raise
    except Exception as error:  # values of the right types that describe no network
        raise UserError(
            where, f"model_config.network describes no buildable network ({' '.join(str(error).split())[:200]})"
        ) from None
    for each in contracts.values():
        _check_interface(config["network"], each, where)
    _check_weights(shapes, bundle["model_state_dict"], where)
    network = rebuild_network(config, f"{where}: model_config")
    network.load_state_dict(bundle["model_state_dict"])
    return network.eval(), contract, bundle["export_metadata"]


def _contracts(bundle: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """The bundle's contracts by interface name, each checked (format 2 bundles hold one)."""
    config = bundle["model_config"]
    if bundle["format_version"] == 2:
        check_contract(config["contract"], where)
        return {config["contract"]["interface"]: config["contract"]}
    for name, contract in config["contracts"].items():
        check_contract(contract, f"{where}: contracts.{name}")
        if contract["interface"] != name:
            raise UserError(where, f"contracts.{name} describes interface {contract['interface']!r}")
    return config["contracts"]


def _chosen(contracts: dict[str, dict[str, Any]], interface: str | None, where: str) -> dict[str, Any]:
    names = list(contracts)
    if interface is None:
        if len(names) == 1:
            return contracts[names[0]]
        raise UserError("model_interface", f"{where} serves the interfaces {names}; choose one")
    if interface not in contracts:
        raise UserError(
            "model_interface",
            f"{interface!r} is not an interface of {where} ({', '.join(names)})" + did_you_mean(interface, names),
        )
    return contracts[interface]


def _check_interface(network: dict[str, Any], contract: dict[str, Any], where: str) -> None:
    """The contract's interface is one of model_config's (already built), reading and predicting the same columns."""
    interface = network["interfaces"].get(contract["interface"])
    if interface is None:
        raise UserError(where, f"the contract's interface {contract['interface']!r} is not in model_config")
    for field in ("input_columns", "target_columns"):
        if sorted(interface["config"][field]) != sorted(contract[field]):
            raise UserError(where, f"the contract's {field} are not the ones model_config describes")
    described = {
        "context_length": network.get("context_length"),
        "prediction_length": (interface["config"].get("decoder") or {}).get("prediction_length"),
    }
    for field, value in described.items():
        if value is not None and value != contract[field]:
            raise UserError(where, f"the contract's {field} {contract[field]} is not model_config's {value}")
