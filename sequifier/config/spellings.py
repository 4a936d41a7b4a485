"""Spellings of sequifier 3.x train configs, rewritten into the canonical form during expansion.

| 3.x spelling                                  | canonical                                  |
|-----------------------------------------------|--------------------------------------------|
| global_training.early_stopping_epochs         | global_training.early_stopping_patience    |
| dataset_training.<name>.freeze.ingestion_adapter | dataset_training.<name>.freeze.adapter  |
| parameter groups (GROUP_SPELLINGS)            | their groups here                          |
| initializer `weight: zeros` (a string)        | `weight: {method: zeros}`                  |
| initializer `uniform: {low, high}`            | `uniform: {a, b}`                          |
| global_training.read_format `csv`             | `parquet` (which reads merged csv splits)  |

Parameter groups are renamed wherever they select parameters: the keys of every
`initialization` mapping (backbone, ingestion nodes, decoders) and the `freeze` /
`freezing_except` lists of every freeze node.
Works on plain data after the singleton expansion, so every path is canonical.
"""

from __future__ import annotations

from typing import Any

from sequifier.config.errors import UserError

# 3.x parameter group -> the groups it is here. 3.x's fallback.linear holds the one linear layer
# its catalog does not name that this sequifier builds, the gate of a gated merge; the groups of
# modules this sequifier does not build (temporal convolutions, range projections) select nothing.
GROUP_SPELLINGS: dict[str, tuple[str, ...]] = {
    "feed_forward.input": ("feed_forward.up",),
    "feed_forward.output": ("feed_forward.down",),
    "embedding.input": ("embedding.categorical",),
    "real_feature_projection": ("embedding.real",),
    "embedding.position": ("position",),
    "fallback.linear": ("merge.gate",),
    "temporal_convolution": (),
    "position.range_projection": (),
    "fallback.convolution": (),
}
RENAMED_FIELDS = {
    "global_training": {"early_stopping_epochs": "early_stopping_patience"},
    "freeze": {"ingestion_adapter": "adapter"},
}
FREEZE_SCOPES = ("backbone", "ingestion", "adapter", "decoder")
INITIALIZER_BOUNDS = {"low": "a", "high": "b"}


def canonical_spellings(config: dict[str, Any]) -> None:
    """Rewrite the 3.x spellings of expanded config data in place."""
    training = config.get("global_training")
    _rename_fields(training, RENAMED_FIELDS["global_training"], "global_training")
    if isinstance(training, dict) and training.get("read_format") == "csv":
        training["read_format"] = "parquet"
    model = config.get("model")
    if isinstance(model, dict):
        backbone = model.get("backbone")
        if isinstance(backbone, dict):
            _initialization(backbone, "model.backbone")
        for name, interface in _items(model.get("interfaces")):
            if isinstance(interface, dict):
                _ingestion(interface.get("ingestion"), f"model.interfaces.{name}.ingestion")
                if isinstance(interface.get("decoder"), dict):
                    _initialization(interface["decoder"], f"model.interfaces.{name}.decoder")
    for name, dataset in _items(config.get("dataset_training")):
        freeze = dataset.get("freeze") if isinstance(dataset, dict) else None
        where = f"dataset_training.{name}.freeze"
        _rename_fields(freeze, RENAMED_FIELDS["freeze"], where)
        for scope in FREEZE_SCOPES:
            _freeze_node(freeze.get(scope) if isinstance(freeze, dict) else None, f"{where}.{scope}")


def _items(mapping: Any) -> list[tuple[str, Any]]:
    return list(mapping.items()) if isinstance(mapping, dict) else []


def _rename_fields(node: Any, renames: dict[str, str], where: str) -> None:
    if not isinstance(node, dict):
        return
    for old, new in renames.items():
        if old not in node:
            continue
        if node.get(new) is not None:  # null is the schema's default, which composition writes in
            raise UserError(f"{where}.{old}", f"is the sequifier 3.x spelling of {where}.{new}; set only one of them")
        node[new] = node.pop(old)


def _groups(selectors: list[Any]) -> list[Any]:
    """Selectors with every 3.x group replaced by its groups here (order kept, duplicates dropped)."""
    out: list[Any] = []
    for selector in selectors:
        for group in GROUP_SPELLINGS.get(selector, (selector,)) if isinstance(selector, str) else (selector,):
            if group not in out:
                out.append(group)
    return out


def _freeze_node(node: Any, where: str) -> None:
    if not isinstance(node, dict):
        return
    for key in ("freeze", "freezing_except"):
        if isinstance(node.get(key), list):
            node[key] = _groups(node[key])
    for name, child in _items(node.get("branches")):
        _freeze_node(child, f"{where}.branches.{name}")


def _ingestion(node: Any, where: str) -> None:
    if not isinstance(node, dict):
        return
    _initialization(node, where)
    for name, child in _items(node.get("branches")):
        _ingestion(child, f"{where}.branches.{name}")


def _initialization(node: dict[str, Any], where: str) -> None:
    overrides = node.get("initialization")
    if not isinstance(overrides, dict):
        return
    canonical: dict[str, Any] = {}
    for selector, targets in overrides.items():
        for group in GROUP_SPELLINGS.get(selector, (selector,)):
            if group in canonical:
                raise UserError(
                    f"{where}.initialization.{selector}",
                    f"selects {group}, which this initialization already sets; keep one of the two spellings",
                )
            canonical[group] = _initializer_targets(targets)
    node["initialization"] = canonical


def _initializer_targets(targets: Any) -> Any:
    if not isinstance(targets, dict):
        return targets
    return {target: _initializer(method) for target, method in targets.items()}


def _initializer(method: Any) -> Any:
    """`zeros` -> {method: zeros}; uniform's `low`/`high` -> `a`/`b`."""
    if isinstance(method, str):
        return {"method": method}
    if isinstance(method, dict) and method.get("method") == "uniform":
        return {INITIALIZER_BOUNDS.get(key, key): value for key, value in method.items()}
    return method
