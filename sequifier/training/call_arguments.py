"""The optimizer and scheduler arguments of a config, checked against the torch classes before any job starts.

Names must be ones the class takes, booleans and numbers must have their type (YAML's `no` is a
string, which torch would take as true), and the whole call must survive one trial step on a
stand-in parameter: torch checks most values only when it builds or steps the optimizer.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from sequifier.config.errors import did_you_mean
from sequifier.config.schema import default_call
from sequifier.config.typed import ProblemList
from sequifier.training.optimization import OWNED_ARGUMENTS, torch_class, trial_refusal, without_device_bound

# Lengths of the trial schedule where the config gives none: a refusal must hold for both, since one length alone
# can be degenerate for some arguments (OneCycleLR's pct_start x length = 1); the real length is tried at training.
TRIAL_LENGTHS = (1000, 1001)
NUMBER_NAMES = {"float", "int"}


def accepted_arguments(kind: str, name: str) -> list[str]:
    """Keyword arguments a user may set for this optimizer or scheduler (not those sequifier owns)."""
    parameters = inspect.signature(torch_class(kind, name)).parameters
    names = [
        p for p in parameters if p not in OWNED_ARGUMENTS and parameters[p].kind is not inspect.Parameter.VAR_KEYWORD
    ]
    if kind == "scheduler" and name == "OneCycleLR":
        names.append("total_steps")
    return list(dict.fromkeys(names))


def check_arguments(device: str, learning_rate: float, calls: dict[str, dict | None], problems: ProblemList) -> None:
    """Problems of the optimizer and scheduler calls ({"optimizer": call, "scheduler": call or None}), by path.

    The trial step runs on the CPU, so that checking never claims an accelerator; for training on
    another `device` it leaves out the arguments whose validity depends on the device.
    """
    before = len(problems.problems)
    for kind, call in calls.items():
        if call is not None:
            _check_names_and_types(kind, call, problems)
    if len(problems.problems) == before and not _defaults_only(calls):
        if device != "cpu":
            calls = {kind: without_device_bound(call) for kind, call in calls.items()}
        _trial_step(learning_rate, calls, problems)


def _defaults_only(calls: dict[str, dict | None]) -> bool:
    """An optimizer without arguments and the default scheduler (or none) need no trial (which costs the process
    torch._dynamo's import, 1-2 s, where a refused or distributed run would otherwise not load it)."""
    scheduler = calls.get("scheduler")
    return set(calls["optimizer"]) == {"name"} and scheduler in (None, default_call("scheduler"))


def _check_names_and_types(kind: str, call: dict[str, Any], problems: ProblemList) -> None:
    name = call["name"]
    accepted = accepted_arguments(kind, name)
    parameters = inspect.signature(torch_class(kind, name)).parameters
    for argument, value in call.items():
        if argument == "name":
            continue
        where = f"global_training.{kind}.{argument}"
        if argument not in accepted:
            owned = " (sequifier sets it from global_training.learning_rate)" if argument == "lr" else ""
            problems.add(
                where,
                f"{name} does not take this argument{owned}"
                + did_you_mean(argument, accepted)
                + f"; it takes {', '.join(accepted)}",
            )
        elif argument in parameters:
            wrong = _type_problem(parameters[argument], value)
            if wrong:
                problems.add(where, f"{name} takes {wrong}, got {value!r}")


def _type_problem(parameter: inspect.Parameter, value: Any) -> str | None:
    """What the argument takes, when `value` does not have that type; None when it does (or torch names no type)."""
    annotation = parameter.annotation
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    names = set(re.findall(r"[A-Za-z_]+", text)) - {"torch", "Tensor", "typing", "Optional"}
    optional = "None" in names or parameter.default is None
    names.discard("None")
    if value is None and optional:
        return None
    if names == {"tuple", "float"} and isinstance(parameter.default, tuple):
        size = len(parameter.default)
        numbers = isinstance(value, (list, tuple)) and all(_is_number(v, (int, float)) for v in value)
        return None if numbers and len(value) == size else f"a list of {size} numbers"
    if names == {"bool"}:
        return None if isinstance(value, bool) else "true or false" + (" (or null)" if optional else "")
    if names and names <= NUMBER_NAMES:
        if _is_number(value, (int,) if names == {"int"} else (int, float)):
            return None
        return ("an integer" if names == {"int"} else "a number") + (" (or null)" if optional else "")
    return None


def _trial_step(learning_rate: float, calls: dict[str, dict | None], problems: ProblemList) -> None:
    """Build the optimizer, then it and the scheduler, on a stand-in parameter and step them.

    A refusal names the argument that alone causes it, or else the whole call.
    """
    for kind in ("optimizer", "scheduler"):
        call = calls.get(kind)
        if call is None:
            continue
        others = {"optimizer": calls["optimizer"], "scheduler": None}
        error = _trial(learning_rate, {**others, kind: call})
        if error is None:
            continue
        alone = [
            argument
            for argument in call
            if argument != "name"
            and _trial(learning_rate, {**others, kind: {"name": call["name"], argument: call[argument]}})
        ]
        where = f"global_training.{kind}" + (f".{alone[0]}" if len(alone) == 1 else "")
        problems.add(where, _refusal(call, error))
        return


def _trial(learning_rate: float, calls: dict[str, dict | None]) -> Exception | None:
    """What torch raises when it builds these calls on a stand-in parameter and steps each once."""
    errors = [trial_refusal(learning_rate, calls, length, steps=1) for length in TRIAL_LENGTHS]
    return errors[0] if all(errors) else None


def _refusal(call: dict[str, Any], error: Exception) -> str:
    said = " ".join(str(error).split())[:300] or type(error).__name__
    arguments = ", ".join(f"{k}={v!r}" for k, v in call.items() if k != "name")
    return f"torch refuses {call['name']}({arguments}): {said}"


def _is_number(value: Any, types: tuple[type, ...]) -> bool:
    return isinstance(value, types) and not isinstance(value, bool)
