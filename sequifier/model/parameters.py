"""The semantic parameter catalog: a stable group name for every parameter of the network.

Modules are tagged where they are built (`tag(module, group)`); every parameter takes the
group of its nearest tagged ancestor, and untagged parameters are `free_parameter`.
Initialization (and later freezing and optimizer groups) select parameters by these names.
"""

from __future__ import annotations

from torch import nn

from sequifier.config.schema import PARAMETER_GROUPS

GROUP_ATTRIBUTE = "semantic_group"
FREE = "free_parameter"


def tag(module: nn.Module, group: str) -> nn.Module:
    if group not in PARAMETER_GROUPS:
        raise ValueError(f"{group!r} is not a semantic parameter group")
    setattr(module, GROUP_ATTRIBUTE, group)
    return module


def parameter_groups(module: nn.Module) -> dict[str, str]:
    """Parameter name -> semantic group, each shared parameter once (under its first name)."""
    groups: dict[str, str] = {}
    for name, sub in module.named_modules():
        group = getattr(sub, GROUP_ATTRIBUTE, None)
        if group is None:
            continue
        for parameter_name, _ in sub.named_parameters(prefix=name):
            groups.setdefault(parameter_name, group)
    return {name: groups.get(name, FREE) for name, _ in module.named_parameters()}


def matches(selector: str, group: str) -> bool:
    """A selector names a group or a dotted prefix of it (`feed_forward` selects `feed_forward.up`)."""
    return group == selector or group.startswith(selector + ".")
