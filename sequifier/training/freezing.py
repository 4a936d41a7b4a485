"""Dataset freezing: which parameters a dataset's updates leave untouched.

A scope (backbone, ingestion, adapter, decoder) or ingestion branch may say
`freeze: [selectors]` (those groups frozen, the rest not) or `freezing_except: [selectors]`
(everything frozen but those); `freeze: []` unfreezes the scope and `freezing_except: []`
freezes it. A node without a selector keeps the decision it inherits; branches inherit
their parent's, and a composite's merge parameters follow the composite's own decision.
Frozen gradients are dropped before each optimizer step, so momentum and weight decay
cannot move those parameters either.
"""

from __future__ import annotations

from typing import Callable

from torch import nn

from sequifier.config.errors import UserError
from sequifier.config.schema import FreezeNode, IngestionConfig, TrainConfig
from sequifier.model.network import SequifierNetwork
from sequifier.model.parameters import matches, parameter_groups

Decision = Callable[[str], bool]  # semantic group -> frozen?


def _never(group: str) -> bool:
    return False


def _decision(node: FreezeNode | None, inherited: Decision, scope: nn.Module, where: str) -> Decision:
    if node is None:
        return inherited
    _refuse_selectors_of_other_scopes(node, scope, where)
    if node.freeze is not None:
        selectors = node.freeze
        return lambda group: any(matches(s, group) for s in selectors)
    if node.freezing_except is not None:
        selectors = node.freezing_except
        return lambda group: not any(matches(s, group) for s in selectors)
    return inherited


def _refuse_selectors_of_other_scopes(node: FreezeNode, scope: nn.Module, where: str) -> None:
    """A selector must select some parameter of its scope: a group of another scope would silently freeze
    nothing (`freeze`) or everything (`freezing_except`)."""
    present = sorted(set(parameter_groups(scope).values()))
    for field in ("freeze", "freezing_except"):
        for selector in getattr(node, field) or ():
            if not any(matches(selector, group) for group in present):
                raise UserError(
                    f"{where}.{field}",
                    f"{selector!r} selects no parameter of this scope, whose groups are {', '.join(present) or 'none'}"
                    " (each scope selects among its own parameters)",
                )


def _frozen_in(module: nn.Module, decision: Decision) -> set[int]:
    return {id(module.get_parameter(name)) for name, group in parameter_groups(module).items() if decision(group)}


def _ingestion(
    config: IngestionConfig, module: nn.Module, node: FreezeNode | None, inherited: Decision, where: str
) -> set[int]:
    decision = _decision(node, inherited, module, where)
    if config.type != "composite":
        return _frozen_in(module, decision)
    frozen = _frozen_in(module.merge, decision)
    chosen = (node.branches or {}) if node else {}
    for name, child in (config.branches or {}).items():
        frozen |= _ingestion(child, module.branches[name], chosen.get(name), decision, f"{where}.branches.{name}")
    return frozen


def frozen_parameters(network: SequifierNetwork, config: TrainConfig) -> dict[str, set[int]]:
    """Dataset name -> ids of the parameters its updates must not change."""
    result = {}
    for name, dataset in config.dataset_training.items():
        freeze = dataset.freeze
        if freeze is None:
            result[name] = set()
            continue
        modules = network.interfaces[dataset.model_interface]
        interface = config.model.interfaces[dataset.model_interface]
        where = f"dataset_training.{name}.freeze"
        scopes = {"backbone": network.backbone, "adapter": modules.adapter, "decoder": modules.decoder}
        result[name] = _ingestion(
            interface.ingestion, modules.ingestion, freeze.ingestion, _never, f"{where}.ingestion"
        )
        for scope, module in scopes.items():
            result[name] |= _frozen_in(module, _decision(getattr(freeze, scope), _never, module, f"{where}.{scope}"))
    return result


def refuse_datasets_that_train_nothing(
    network: SequifierNetwork, config: TrainConfig, frozen: dict[str, set[int]]
) -> None:
    """A dataset that training_plan trains must leave some of the parameters it uses free to change."""
    trained = {s.source.partition(".")[0] for phase in config.training_plan.phases for s in phase.sources}
    for name in sorted(trained):
        interface = network.interfaces[config.dataset_training[name].model_interface]
        used = [*network.backbone.parameters(), *interface.parameters()]
        if used and all(id(parameter) in frozen[name] for parameter in used):
            raise UserError(
                f"dataset_training.{name}.freeze",
                "freezes every parameter this dataset trains, so its batches would change nothing; leave some group "
                "free, or leave the dataset out of training_plan's sources (evaluation may still use it)",
            )
