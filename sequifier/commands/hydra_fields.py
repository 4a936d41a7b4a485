"""Whether a `hydra.<key>` override names a setting of Hydra's own config: Hydra lets `+` add any key to it, and
one added by a typo (`+hydra.run.dirr`) would be taken and never read."""

from __future__ import annotations

from dataclasses import is_dataclass

from sequifier.config.errors import UserError, did_you_mean


def check_hydra_field(override: str) -> None:
    """UserError for a `hydra.*` key that no setting of Hydra has, where Hydra's schema lists its section's fields
    (the launcher's are checked against the launcher; open sections such as `hydra.job.env_set` take any key)."""
    from hydra.conf import HydraConf
    from omegaconf import DictConfig, OmegaConf

    key = override.lstrip("+~").split("=", 1)[0]
    if not key.startswith("hydra."):
        return
    node, section = OmegaConf.structured(HydraConf), "hydra"
    for name in key.split(".")[1:]:
        if not isinstance(node, DictConfig) or not is_dataclass(OmegaConf.get_type(node)):
            return  # a value, an open section, or one whose schema is the chosen preset's (launcher, logging)
        fields = sorted(str(field) for field in node.keys())
        if name not in fields:
            raise UserError(
                override,
                f"{section} has no setting {name!r}{did_you_mean(name, fields)}; its settings are {', '.join(fields)}",
            )
        node, section = node._get_node(name), f"{section}.{name}"
