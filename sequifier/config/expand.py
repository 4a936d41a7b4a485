"""Singleton expansion: rewrites the concise train spellings into the canonical form.

| authored             | canonical                                   |
|----------------------|---------------------------------------------|
| model.interface      | model.interfaces.default                    |
| dataset (+ part)     | dataset_training.default (parts.default)    |
| training_plan.epochs | one sequential phase `train`                |
| evaluation: true     | evaluate the inferred single source         |

Then the spellings of sequifier 3.x configs become canonical (sequifier/config/spellings.py).
Works on plain data (dicts and lists) so that errors after it use canonical paths.
"""

from __future__ import annotations

import copy
from typing import Any

from sequifier.config.errors import UserError, did_you_mean
from sequifier.config.spellings import canonical_spellings

DEFAULT_NAME = "default"


SPELLINGS = {
    "model": ("backbone", "interface", "interfaces"),
    "training_plan": ("epochs", "phases"),
}


def expand_singletons(data: dict[str, Any]) -> dict[str, Any]:
    """Return a canonical copy of composed config data; the input is left unchanged."""
    out = copy.deepcopy(data)
    for section, spellings in SPELLINGS.items():
        _check_spellings(out.get(section), spellings, section)
    if not _present(out.get("dataset")) and not _present(out.get("dataset_training")):
        raise UserError(
            "dataset", "no dataset is configured: add dataset (part, criterion) or dataset_training for several"
        )
    model = out.get("model")
    if isinstance(model, dict):
        _singular_to_named(model, "interface", "interfaces", "model")
    _singular_to_named(out, "dataset", "dataset_training", "")
    datasets = out.get("dataset_training")
    if isinstance(datasets, dict):
        for name, dataset in datasets.items():
            if isinstance(dataset, dict):
                _singular_to_named(dataset, "part", "parts", f"dataset_training.{name}")
                _infer_interface(dataset, out, f"dataset_training.{name}")
    _expand_plan(out)
    _expand_evaluation(out)
    training = out.get("global_training")
    if isinstance(training, dict) and "resume" in training and training["resume"] is None:
        del training["resume"]  # 3.x writes `resume: null` for "never resume"
    canonical_spellings(out)
    return out


def _check_spellings(node: Any, spellings: tuple[str, ...], path: str) -> None:
    """Misspelled keys of a section with singular and plural forms, suggested from both."""
    if not isinstance(node, dict):
        return
    for key in node:
        if key not in spellings:
            raise UserError(
                f"{path}.{key}",
                "unknown field" + did_you_mean(str(key), spellings) + f"; {path} takes {', '.join(spellings)}",
            )


def _present(value: Any) -> bool:
    return value is not None and value != {}


def _singular_to_named(node: dict[str, Any], singular: str, plural: str, path: str) -> None:
    where = f"{path}.{singular}" if path else singular
    if singular not in node:
        return
    value = node.pop(singular)
    if _present(node.get(plural)):
        plural_where = f"{path}.{plural}" if path else plural
        raise UserError(where, f"cannot be combined with {plural_where}; use one spelling at this level")
    if value is not None:
        node[plural] = {DEFAULT_NAME: value}


def _only_name(mapping: Any) -> str | None:
    if isinstance(mapping, dict) and len(mapping) == 1:
        return next(iter(mapping))
    return None


def _infer_interface(dataset: dict[str, Any], config: dict[str, Any], path: str) -> None:
    if "model_interface" in dataset:
        return
    model = config.get("model")
    interfaces = model.get("interfaces") if isinstance(model, dict) else None
    if not isinstance(interfaces, dict) or not interfaces or not all(isinstance(i, dict) for i in interfaces.values()):
        dataset["model_interface"] = DEFAULT_NAME  # validation names what is missing or malformed in the model
        return
    name = _only_name(interfaces)
    if name is None:
        raise UserError(f"{path}.model_interface", "required when the model has several interfaces (or none)")
    dataset["model_interface"] = name


def _single_source(config: dict[str, Any], where: str) -> str:
    name = _only_name(config.get("dataset_training"))
    if name is None:
        raise UserError(
            where, "cannot infer the source: name one explicitly because there are several datasets (or none)"
        )
    return name


def _expand_plan(config: dict[str, Any]) -> None:
    plan = config.get("training_plan")
    if not isinstance(plan, dict) or "epochs" not in plan:
        return
    if _present(plan.get("phases")):
        raise UserError(
            "training_plan.epochs", "cannot be combined with training_plan.phases; put epochs in each phase"
        )
    epochs = plan.pop("epochs")
    source = _single_source(config, "training_plan.epochs")
    plan["phases"] = [{"name": "train", "epochs": epochs, "mode": "sequential", "sources": [{"source": source}]}]


def _expand_evaluation(config: dict[str, Any]) -> None:
    evaluation = config.get("evaluation")
    if evaluation is True:
        config["evaluation"] = {"sources": [{"source": _single_source(config, "evaluation")}]}
    elif evaluation is False:
        config["evaluation"] = None
