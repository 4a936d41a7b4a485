"""PT inference bundles: weights, an execution-only model config with the contract, and export metadata.

A bundle is a dict with exactly BUNDLE_KEYS, readable with `torch.load(weights_only=True)`:
everything but the state dict is plain dicts, lists, strings, numbers and booleans. It holds
no optimizer, paths, parts, plans, evaluation policy or dataset bindings. `read_bundle`
rebuilds the network from `model_config` alone.
"""

from __future__ import annotations

import datetime
import json
import pickle
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
from sequifier.export.contract import build_contract
from sequifier.model.network import SequifierNetwork, build_network

ARTIFACT_TYPE = "sequifier_inference_bundle"
FORMAT_VERSION = 2  # 2: model_config holds the NetworkSpec
BUNDLE_KEYS = ("artifact_type", "format_version", "model_state_dict", "model_config", "export_metadata")


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


def read_bundle(path: Path) -> tuple[SequifierNetwork, dict[str, Any], dict[str, Any]]:
    """Load a bundle: the rebuilt network with its weights (eval mode), its contract, and its export metadata."""
    try:
        bundle = torch.load(path, weights_only=True, map_location="cpu")
    except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as error:
        raise UserError(str(path), f"not a readable PT bundle ({' '.join(str(error).split())[:200]})") from None
    if not isinstance(bundle, dict) or bundle.get("artifact_type") != ARTIFACT_TYPE:
        raise UserError(str(path), f"not a sequifier PT inference bundle (artifact_type {ARTIFACT_TYPE!r} expected)")
    if bundle.get("format_version") != FORMAT_VERSION:
        raise UserError(
            str(path),
            (
                f"bundle format_version {bundle.get('format_version')!r} is not supported "
                f"(this sequifier reads {FORMAT_VERSION})"
            ),
        )
    network = rebuild_network(bundle["model_config"], f"{path}: model_config")
    network.load_state_dict(bundle["model_state_dict"])
    return network.eval(), bundle["model_config"]["contract"], bundle["export_metadata"]
