"""The Hydra layer of `sequifier train`: a config FILE and overrides composed into plain data, and Hydra's launch.

The user's file (with its fragments) is read once per command into a TrainEntry, then composed
on top of the schema defaults through a ConfigStore entry node
`{defaults: [schema, <file>, <groups: null>, _self_]}`, so user values win and `group=option`
overrides select presets shipped in pkg://sequifier.conf. `canonical_config` expands and
validates the composed data into the frozen TrainConfig.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from sequifier.config.errors import UserError, did_you_mean
from sequifier.config.expand import expand_singletons
from sequifier.config.files import MAX_NESTING, nesting
from sequifier.config.fragments import KEY as FRAGMENTS_KEY
from sequifier.config.fragments import compose_file, unresolvable
from sequifier.config.schema import TrainConfig, hydra_defaults, may_be_null, section_fields
from sequifier.config.validate import reject_historical, validate

ENTRY_NAME = "sequifier_train_entry"
UNQUOTED_VALUE = r"[\w\-+./:@]+"  # what Hydra reads as a plain value: letters, digits and _-+./:@
OVERRIDE_KEY_CHARACTER = re.compile(r"[A-Za-z0-9_\-./@\[\]]")  # what Hydra's grammar reads in a key
LONGEST_OVERRIDE_KEY = 240  # bytes: Hydra stats <its conf folder>/<key> to tell a preset group from a field
SCHEMA_NAME = "sequifier_train_schema"
USER_NAME = "sequifier_user_config"
SEARCH_PATH = "hydra.searchpath=[pkg://sequifier.conf]"
PLACED_GROUPS = ("dataset_training/",)  # presets that must name the dataset they apply to with @

# The hydra/launcher presets carry the names of hydra-submitit-launcher's configs, which Hydra 1.3 (its last 1.x)
# still uses as their schema while warning that this "automatic schema matching" is deprecated.
warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/\w+' is validated against ConfigStore schema")


@dataclass(frozen=True)
class Overrides:
    """Command-line overrides split into what every job shares and what a sweep varies."""

    all: list[str]
    swept_keys: list[str]
    combinations: list[list[str]]

    @property
    def unswept_keys(self) -> list[str]:
        """The keys overridden with one value, which a sweep job's folder and model names leave out."""
        return sorted({o.split("=", 1)[0].lstrip("+~") for o in self.all} - set(self.swept_keys))


def last_value(overrides: list[str], key: str) -> str | None:
    """The value the last `key=value` (or `+key=value`) of `overrides` gives, as written; Hydra lets the last win."""
    chosen = [o.split("=", 1)[1] for o in overrides if "=" in o and o.split("=", 1)[0].lstrip("+~") == key]
    return chosen[-1] if chosen else None


def _unparsable(message: str) -> str:
    """Hydra's parse error of an override, with what to do: a call of one of its functions (range(a,3)) that failed
    says why, others need quotes."""
    first, *rest = message.splitlines()
    call = re.match(r"\w+ while evaluating '(.*)': (.*)", rest[0]) if rest else None
    if call is None:
        return (
            f"{first} (a value with spaces or characters other than letters, digits and _-+./:@ needs quotes "
            "around it: key='value')"
        )
    reason = " ".join(line.strip() for line in rest[1:] if line.strip() and not line.startswith("See https:"))
    return (
        f"{first}: {call[1]}: {call[2]}{'; ' + reason if reason else ''} (Hydra's sweep functions are written "
        f"key=range(0,4) or key=choice(a,b); quote a value meant as text: key='{call[1]}')"
    )


def dotted_indices(override: str) -> str:
    """An override's `phases[0]`, as error messages spell paths, as Hydra's `phases.0`."""
    key, equals, value = override.partition("=")
    return re.sub(r"\[(\d+)\]", r".\1", key) + equals + value


def parse_overrides(overrides: list[str]) -> Overrides:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    for override in overrides:
        key, equals, value = override.partition("=")
        if not key.lstrip("+~"):
            raise UserError(override, "an override names its field or preset group before '=': key=value")
        if not equals and ":" in key and not key.startswith("~"):
            field, _, value = key.partition(":")
            raise UserError(override, f"an override sets a value with '=', not ':': {field}={value.strip()}")
        if not equals and not key.startswith("~"):
            raise UserError(override, f"an override sets a value: {key}=<value> (~{key} removes a field)")
        path = key.lstrip("+~")
        if path.startswith(".") or path.endswith(".") or ".." in path:
            named = ".".join(name for name in path.split(".") if name)
            raise UserError(
                override,
                f"a key is a path of field names joined by single dots (global_training.batch_size): "
                f"{key[: len(key) - len(path)]}{named}{equals}{value}",
            )
        if value.startswith("="):
            raise UserError(override, f"holds '=='; an override is written {key}=<value>")
        unreadable = sorted({char for char in path if not OVERRIDE_KEY_CHARACTER.fullmatch(char)})
        if unreadable:
            raise UserError(
                override,
                f"the key holds {', '.join(map(repr, unreadable))}: Hydra reads override keys of ASCII letters, "
                "digits, _ and - (joined by . or /) only; set this field in the config file instead",
            )
    given = overrides
    overrides = [_null_field_deletion(dotted_indices(o)) for o in overrides]
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as error:
        raise UserError("command line", _unparsable(str(error))) from None
    except RecursionError:
        raise UserError("command line", "an override's value nests too deeply to parse") from None
    for override in parsed:
        if len(override.key_or_group.encode()) > LONGEST_OVERRIDE_KEY:
            raise UserError(
                override.key_or_group[:60] + "...",
                f"an override key of {len(override.key_or_group.encode())} bytes cannot be given on the command line "
                f"(Hydra looks each key up as a file name, at most {LONGEST_OVERRIDE_KEY} bytes); set the field in the "
                "config file",
            )
        if nesting(override.value()) > MAX_NESTING:
            raise UserError(override.input_line, f"nests mappings and lists more than {MAX_NESTING} levels deep")
    _refuse_fields_given_twice(given, parsed)
    choices, swept = [], []
    for override in parsed:
        if override.key_or_group.lstrip("+~") == FRAGMENTS_KEY:
            raise UserError(
                override.input_line,
                f"{FRAGMENTS_KEY} is read from the config file before the command line applies; list the fragments "
                "in the file, or pass --config-path a file that lists them",
            )
        if override.is_sweep_override():
            key = override.get_key_element()
            swept.append(override.key_or_group)
            if override.value_type is not None and override.value_type.name == "GLOB_CHOICE_SWEEP":
                raise UserError(
                    override.input_line,
                    "glob() is not supported; list the values (or presets): key=a,b (or key=range(0,4))",
                )
            try:
                values = list(override.sweep_string_iterator())
            except (HydraException, ValueError) as error:
                raise UserError(
                    override.input_line,
                    f"cannot be listed as jobs ({error}); list the values: key=a,b or key=range(0,4)",
                ) from None
            if not values:
                raise UserError(override.input_line, "lists no values, so the sweep would run no job")
            choices.append([f"{key}={value}" for value in values])
        else:
            choices.append([override.input_line])
    return Overrides(list(overrides), swept, [list(c) for c in itertools.product(*choices)])


def _refuse_fields_given_twice(given: list[str], parsed: list) -> None:
    """A field or preset group set or removed (~) twice on the command line, also through a mapping or list that
    holds it: Hydra would apply the later one and drop the other without a word (a swept one: jobs that are one run,
    or a removal the sweep undoes). `~path +path={...}` (or ++) stays, which replaces a whole mapping."""
    fields = [dotted_indices(line).partition("=")[0].lstrip("+~") for line in given]
    for later in range(len(given)):
        for earlier in range(later):
            field = _set_by_both(fields, parsed, earlier, later)
            if field is None or _replaces_a_mapping(given[earlier], given[later], parsed[later]):
                continue
            first, second = given[earlier], given[later]
            if parsed[earlier].is_sweep_override() or parsed[later].is_sweep_override():
                swept, other = (first, second) if parsed[earlier].is_sweep_override() else (second, first)
                raise UserError(
                    other,
                    f"{field} is swept by {swept} on the same command line, and the later of the two would undo the "
                    "other; give the field once",
                )
            raise UserError(
                second,
                f"{field} is given twice on the command line (also by {first}), and Hydra would apply the later one "
                "and drop the other without a word; give it once",
            )


def _set_by_both(fields: list[str], parsed: list, earlier: int, later: int) -> str | None:
    """The field both overrides set (or remove): the same key, or a field inside a mapping or list the other gives
    whole (holding that field, or replacing everything under it when it comes later)."""
    if fields[earlier] == fields[later]:
        return fields[earlier]
    if "/" in fields[earlier] + fields[later]:
        return None
    inner, outer = (earlier, later) if len(fields[earlier]) > len(fields[later]) else (later, earlier)
    if not fields[inner].startswith(fields[outer] + ".") or parsed[outer].is_sweep_override():
        return None
    if parsed[outer].is_delete():
        return fields[inner] if outer == later else None
    value = parsed[outer].value()
    if outer == later and isinstance(value, list):
        return fields[inner]
    for part in fields[inner][len(fields[outer]) + 1 :].split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return fields[inner]


def _replaces_a_mapping(first: str, second: str, second_parsed) -> bool:
    return (
        first.startswith("~")
        and "=" not in first
        and second.startswith("+")
        and not second_parsed.is_sweep_override()
        and isinstance(second_parsed.value(), dict)
    )


def _null_field_deletion(line: str) -> str:
    """`~key` of a field whose default is null, as `key=null`: the same config, but Hydra cannot delete a key whose
    value is null (it takes null for absent), so `~key` would fail where the user's file leaves the field null."""
    if not line.startswith("~") or "=" in line:
        return line
    node: Any = hydra_defaults()
    for part in line[1:].split("."):
        if not isinstance(node, dict) or part not in node:
            return line
        node = node[part]
    return f"{line[1:]}=null" if node is None else line


def config_groups() -> list[str]:
    """Group names (`model/backbone`, ...) of every folder of presets in pkg://sequifier.conf."""
    root = resources.files("sequifier.conf")
    groups = []

    def walk(node, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir() and not child.name.startswith("__"):
                name = f"{prefix}{child.name}"
                if any(c.name.endswith(".yaml") for c in child.iterdir()):
                    groups.append(name)
                walk(child, name + "/")

    walk(root, "")
    return sorted(groups)


@dataclass(frozen=True)
class TrainEntry:
    """The user's train file composed with its fragments: read once per command."""

    config_file: Path
    node: dict[str, Any]


def read_entry(config_file: Path) -> TrainEntry:
    node = compose_file(config_file)
    if not node:
        raise UserError(
            str(config_file),
            "is empty: a train config names the model, its data and the plan (`sequifier make` writes one)",
        )
    _refuse_other_values_for_sections(config_file, node, hydra_defaults(), "")
    return TrainEntry(config_file, node)


def _refuse_other_values_for_sections(config_file: Path, node: dict, defaults: dict, prefix: str) -> None:
    """A list or a scalar where the schema has a section, named by its path (Hydra's merge would name none)."""
    for key, default in defaults.items():
        value = node.get(key) if isinstance(default, dict) else None
        if isinstance(value, dict):
            _refuse_other_values_for_sections(config_file, value, default, f"{prefix}{key}.")
        elif value is not None and not (isinstance(value, str) and value.startswith("${")):
            kind = "a list" if isinstance(value, list) else f"{value!r}"
            raise UserError(
                f"{config_file}: {prefix}{key}", f"expected a mapping of fields (a section of the config), got {kind}"
            )


def register_entry(entry: TrainEntry) -> None:
    """Store the schema defaults, the user's file and the entry node that orders them (no file is read)."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    store.store(name=SCHEMA_NAME, node=hydra_defaults())
    store.store(name=USER_NAME, node=entry.node)
    defaults: list[Any] = [SCHEMA_NAME, USER_NAME]
    defaults += [{group: None} for group in config_groups() if not group.startswith(("hydra/",) + PLACED_GROUPS)]
    defaults.append("_self_")
    store.store(name=ENTRY_NAME, node={"defaults": defaults})


def _composing() -> Any:
    """Hydra's compose API as hydra.main runs a job: presets from pkg://sequifier.conf (SEARCH_PATH) only, none from
    the user's folder, whose files would otherwise replace presets of the same name in checks but not in jobs."""
    from hydra import initialize

    return initialize(version_base="1.3", config_path=None, job_name="train")


def compose_entry(entry: TrainEntry, overrides: list[str]) -> dict[str, Any]:
    """The entry plus overrides, composed with Hydra's compose API into plain data (no run directory)."""
    from hydra import compose
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    register_entry(entry)
    _check_placed_presets(overrides)
    _refuse_group_overrides_that_do_nothing(overrides)
    try:
        with _composing():
            try:
                return OmegaConf.to_container(
                    compose(config_name=ENTRY_NAME, overrides=overrides + [SEARCH_PATH]), resolve=True
                )
            except (HydraException, OmegaConfBaseException):
                selections = [o for o in overrides if "/" in o.split("=", 1)[0]]
                _check_override_keys(compose(config_name=ENTRY_NAME, overrides=selections + [SEARCH_PATH]), overrides)
                raise
    except (HydraException, OmegaConfBaseException) as error:
        merging = re.fullmatch(r"Error merging override (.+)", " ".join(str(error).split()))
        if merging and error.__cause__ is not None:
            raise _merge_error(merging.group(1), error.__cause__) from None
        raise _composition_error(entry, overrides, " ".join(str(error).split())) from None
    except TypeError:  # OmegaConf's answer to ~ of a list's item: "list indices must be integers ..."
        items = [o for o in overrides if o.startswith("~") and o.split("=", 1)[0].rsplit(".", 1)[-1].isdigit()]
        if not items:
            raise
        key = items[0][1:].split("=", 1)[0].rsplit(".", 1)[0]
        raise UserError(
            items[0], f"~ removes a field, not an item of a list; set the whole list instead: {key}=[...]"
        ) from None
    except ValueError as error:  # Hydra's answer to a config group given null, e.g. model=null
        index = re.search(r"invalid literal for int\(\) with base 10: '([^']*)'", str(error))
        if index:
            chosen = [o for o in overrides if index.group(1) in o.lstrip("+~").split("=", 1)[0].split(".")]
            raise UserError(
                chosen[-1] if chosen else "command line",
                f"{index.group(1)!r} is no index of a list: a list's items are numbered from 0 (or set the whole list)",
            ) from None
        nulls = [o for o in overrides if o.partition("=")[2].strip() in ("null", "~", "")]
        where = nulls[0] if nulls else str(entry.config_file)
        problem = " ".join(str(error).split())
        raise UserError(
            where, f"{problem}; a config group takes the name of a preset, and ~KEY removes a field"
        ) from None


def _merge_error(override: str, cause: BaseException) -> UserError:
    """Why OmegaConf could not apply an override, named by the override (Hydra names the config file)."""
    problem, _, rest = str(cause).partition("\n")
    key = re.search(r"full_key: (\S+)", rest)
    at = f" at {key.group(1)}" if key else ""
    if "Cannot merge DictConfig with ListConfig" in problem or "Cannot merge ListConfig with DictConfig" in problem:
        return UserError(override, f"cannot apply it{at}: a list and a mapping of fields do not replace one another")
    if "list index out of range" in problem:
        return UserError(override, f"cannot apply it{at}: the index is past the list's end; set the whole list instead")
    return UserError(override, f"cannot apply it{at}: {' '.join(problem.split())}")


def _deletion_error(key: str, overrides: list[str], problem: str) -> UserError:
    """`problem`, named by the `~key` override that asked for the deletion."""
    chosen = [o for o in overrides if o.startswith("~") and o[1:].split("=", 1)[0] == key]
    return UserError(chosen[-1] if chosen else f"~{key}", problem)


def _composition_error(entry: TrainEntry, overrides: list[str], message: str) -> UserError:
    """Hydra's error, named by the override that chose a missing preset (and without its search path) if one did."""
    missing = re.search(r"Could not find '([^']+)'", message)
    if missing:
        group, _, option = missing.group(1).rpartition("/")
        chosen = [o for o in overrides if o.lstrip("+~").split("=", 1)[0].split("@")[0] == group]
        if chosen:
            offered = re.search(r"Available options in '[^']+': (.*?) Config search path", message)
            options = f"; the presets of {group} are {offered.group(1)}" if offered else ""
            return UserError(chosen[-1], f"there is no preset {option!r} in {group}{options}")
    resolving = re.fullmatch(r"(.*?) full_key: (\S+) object_type=\S+", message)
    if resolving:
        problem, key = resolving.groups()
        if "HydraConfig was not set" in problem:
            problem += (
                "; ${hydra:...} is not available in a train config or its overrides, which are composed before Hydra "
                "runs a job (a sweep job's model name carries its swept values by itself)"
            )
        chosen = [o for o in overrides if o.lstrip("+~").split("=", 1)[0] == key]
        if not chosen:
            return unresolvable(entry.config_file, key, problem)
        return UserError(chosen[-1], f"cannot resolve the interpolation: {problem}")
    merged = re.match(r"Could not override '([^']+)'\. To append to your config use \+(\S+?)=(.*)$", message)
    if merged and merged.group(3).lstrip().startswith("{"):
        key, value = merged.group(1), merged.group(3)
        chosen = [o for o in overrides if o.split("=", 1)[0] == key]
        return UserError(
            chosen[-1] if chosen else key,
            f"a mapping merges into the {key} the config has, which lacks some of its fields; write ++{key}={value} "
            f"to merge and add them, or replace the mapping with ~{key} +{key}={value}",
        )
    deleted = re.search(r"Could not delete from config\. '([^']+)' does not exist", message)
    if deleted and deleted.group(1).rsplit(".", 1)[-1].isdigit():
        key = deleted.group(1)
        return _deletion_error(
            key,
            overrides,
            f"~ removes a field, not an item of a list; set the whole list instead: {key.rsplit('.', 1)[0]}=[...]",
        )
    other_value = re.search(r"Could not delete from config\. The value of '([^']+)' is (.*) and not (.*?)\.?$", message)
    if other_value:
        key, value, given = other_value.groups()
        chosen = [o for o in overrides if o.startswith("~") and o[1:].split("=", 1)[0] == key]
        return UserError(
            chosen[-1] if chosen else f"~{key}",
            f"~{key}={given} removes {key} only where its value is {given}, and it is {value}; ~{key} removes it",
        )
    if deleted:
        key = deleted.group(1)
        group = key.replace(".", "/")
        if group in config_groups():
            presets = ", ".join(group_presets(group))
            none = f"write +{key}=null for none, or " if may_be_null(key.split(".")) else "it cannot be left out; "
            problem = (
                f"{key} is not in the config file, so its default preset applies; {none}choose a preset with "
                f"{group}=<preset> (one of {presets})"
            )
        else:
            problem = (
                f"there is no field {key} to remove; nor can Hydra remove a field whose value is null "
                f"(set {key}=<value> instead)"
            )
        return _deletion_error(key, overrides, problem)
    not_listed = re.search(r"Could not delete '([^'/=]+)'\. No match in the defaults list", message)
    if not_listed:
        key = not_listed.group(1)
        return _deletion_error(
            key, overrides, f"{key} is a section every train config needs, so it cannot be removed; change its fields"
        )
    unknown_group = re.search(r"Could not (?:override|delete) '([^'=]+/[^'=]+)'", message)
    if unknown_group and not unknown_group.group(1).startswith("hydra/"):
        group = unknown_group.group(1)
        chosen = [o for o in overrides if o.lstrip("+~").split("=", 1)[0].split("@")[0] == group]
        groups = config_groups()
        placed = [o for o in overrides if o.split("=", 1)[0] == group and "@" in group]
        if placed and group.split("@")[0] in groups:
            return UserError(
                placed[-1],
                f"a preset placed with @ adds a field the config does not have, which takes a leading +: +{placed[-1]}",
            )
        return UserError(
            chosen[-1] if chosen else group,
            f"there is no preset group {group!r}{did_you_mean(group, groups)}; the groups are {', '.join(groups)}",
        )
    appended = re.match(r"Could not append to config\. An item is already at '([^']+)'", message)
    if appended:
        key = appended.group(1)
        chosen = [
            o for o in overrides if o.startswith("+") and not o.startswith("++") and o[1:].split("=", 1)[0] == key
        ]
        value = chosen[-1].split("=", 1)[1] if chosen else "<value>"
        return UserError(
            chosen[-1] if chosen else f"+{key}",
            f"{key} is in the config already, and + adds a field that is not; set it: {key}={value}",
        )
    forced = re.match(r"force-add of config groups is not supported: '([^']+)'", message)
    if forced:
        return UserError(
            forced.group(1), f"++ adds a field; a preset is chosen without it: {forced.group(1).lstrip('+')}"
        )
    chosen_twice = re.match(r"Multiple values for ([^ ]+)\. To override a value use", message)
    if chosen_twice:
        group = chosen_twice.group(1)
        added = [o for o in overrides if o.startswith("+") and o.lstrip("+").split("=", 1)[0] == group]
        if added:
            return UserError(
                added[-1],
                f"every train config has a place for a preset of {group}, so + has nothing to add; choose the "
                f"preset without +: {added[-1].lstrip('+')}",
            )
    absent = re.match(r"Could not override '([^']+)'\. To append to your config use \+", message)
    if absent:
        key = absent.group(1)
        chosen = [o for o in overrides if o.split("=", 1)[0] == key]
        return UserError(chosen[-1] if chosen else key, f"there is no field {key} to set; +{key}=<value> adds it")
    return UserError(str(entry.config_file), message)


def hydra_config(entry: TrainEntry, overrides: list[str]) -> DictConfig:
    """The entry plus overrides with the `hydra` node, composed as Hydra will compose it for a job (unresolved)."""
    from hydra import compose

    register_entry(entry)
    with _composing():
        return compose(config_name=ENTRY_NAME, overrides=overrides + [SEARCH_PATH], return_hydra_config=True)


def launcher_settings(entry: TrainEntry, overrides: list[str]) -> dict[str, Any]:
    """The `hydra.launcher` node the overrides select (unresolved), composed as Hydra will compose it for a job."""
    return OmegaConf.to_container(hydra_config(entry, overrides).hydra.launcher, resolve=False)


def compose_config(config_file: Path, overrides: list[str]) -> dict[str, Any]:
    """Read `config_file` and compose it with `overrides` (for a single composition)."""
    return compose_entry(read_entry(config_file), overrides)


def _refuse_group_overrides_that_do_nothing(overrides: list[str]) -> None:
    """Overrides Hydra reads as preset choices that choose nothing: a whole section such as `global_training=...`
    (a folder of preset groups, not a group), a list of presets, or `~group` where no preset is chosen (none is
    unless an override chooses one), which would leave the file's own section as it is."""
    groups = set(config_groups())
    sections = {group.split("/", 1)[0] for group in groups} - {"hydra"}
    for override in overrides:
        key, equals, value = override.lstrip("+").partition("=")
        if not equals or override.startswith("~"):
            continue
        if key in sections - groups:
            raise UserError(
                override,
                f"{key} is a section, set field by field ({key}.<field>=...) or by the presets of its groups "
                f"({', '.join(sorted(g for g in groups if g.startswith(key + '/')))})",
            )
        if key in groups and value.strip().startswith("["):
            raise UserError(
                override, f"choose one preset of {key} (one of {', '.join(group_presets(key))}), not a list"
            )
    chosen = {o.lstrip("+").split("=", 1)[0] for o in overrides if not o.startswith("~")}
    for override in overrides:
        group = override[1:].split("=", 1)[0] if override.startswith("~") else None
        if group not in groups or group in chosen:
            continue
        if "/" not in group:
            problem = f"{group} is a section every train config needs, so it cannot be removed; change its fields"
        else:
            problem = (
                f"no preset of {group} is chosen, so there is none to remove and ~{group} would change nothing; "
                f"change the file's fields, or choose a preset with {group}=<preset> "
                f"(one of {', '.join(group_presets(group))})"
            )
        raise UserError(override, problem)


def _check_placed_presets(overrides: list[str]) -> None:
    for override in overrides:
        group, _, option = override.lstrip("+").partition("=")
        if group.startswith(PLACED_GROUPS) and "@" not in group:
            raise UserError(
                group,
                f"a dataset preset needs the dataset it applies to: +{group}@dataset.freeze={option} (singleton file) "
                f"or +{group}@dataset_training.<name>.freeze={option}",
            )


ALTERNATIVE_SPELLINGS = {  # a file writes one of each pair, the singleton or the named form
    "": ("dataset", "dataset_training"),
    "model": ("interface", "interfaces"),
    "training_plan": ("epochs", "phases"),
}


def _missing_field(walked: list[str], part: str, node: dict, override: str) -> str:
    """Why an override's field is not in the composed file: the file's other spelling of that section, a field
    the schema does not know (where '+' would be refused too), or a field the file leaves out ('+' adds it)."""
    section = ".".join(walked)
    written = [s for s in ALTERNATIVE_SPELLINGS.get(section, ()) if s != part and s in node]
    if part in ALTERNATIVE_SPELLINGS.get(section, ()) and written:
        spelled = f"{section}.{written[0]}" if section else written[0]
        return f"is not in the config file, which writes {spelled} instead: override that spelling"
    suggestion = did_you_mean(part, [str(k) for k in node])
    known = section_fields(walked)
    group = "/".join([*walked, part])
    if group in config_groups():
        return _preset_group_hint(group, override)
    if known is not None and part not in known and part not in ALTERNATIVE_SPELLINGS.get(section, ()):
        elsewhere = [
            f"{top}.{part}"
            for top in sorted(section_fields([]) or ())
            if part in (section_fields([top]) or set()) | set(ALTERNATIVE_SPELLINGS.get(top, ()))
        ]
        return "unknown field" + (suggestion or (f" (did you mean {elsewhere[0]}?)" if elsewhere else ""))
    if suggestion:  # a near spelling of a field that is there: most likely a typo of it
        return "is not in the config file" + suggestion
    return f"is not in the config file; to set a field the file leaves out, write +{override}"


def _preset_group_hint(group: str, override: str) -> str:
    """What to write instead of setting a field that only a preset of `group` (or the file) puts in the config."""
    key, _, value = override.lstrip("+").partition("=")
    section = group.replace("/", ".")
    presets = group_presets(group)
    choose = f"choose a preset with {group}=<preset> (one of {', '.join(presets)})"
    if key.rpartition(".")[2] == "lr" and section == "global_training.optimizer":
        return "is not in the config file, and sequifier sets its lr from global_training.learning_rate: set that"
    if key == section and value in presets:
        return f"is a preset group, not a field: choose the preset with {group}={value}"
    if key == section:
        return f"is not in the config file (a preset fills it): write +{key}={value} to set it, or {choose}"
    return (
        f"is not in the config file (a preset fills it): {choose} and set its arguments with ++{key}={value}, "
        f"or write the whole call with +{section}={{name: ..., ...}}"
    )


def group_presets(group: str) -> list[str]:
    """The preset names of a config group (`global_training/scheduler` -> cosine, onecycle, step)."""
    folder = resources.files("sequifier.conf").joinpath(group)
    return sorted(child.name[: -len(".yaml")] for child in folder.iterdir() if child.name.endswith(".yaml"))


def _check_override_keys(base: DictConfig, overrides: list[str]) -> None:
    """An override of a field that is not there names it, with a did-you-mean, instead of Hydra's trace."""
    data = OmegaConf.to_container(base, resolve=False)
    for override in overrides:
        key = override.split("=", 1)[0]
        if key.startswith("~") and "/" not in key and not key.startswith("~hydra."):
            _check_removed_path(data, override)
        if key.startswith(("+", "~")) or "/" in key or key.startswith("hydra.") or "=" not in override:
            continue
        node: Any = data
        walked = []
        for part in key.split("."):
            if not isinstance(node, dict):
                if isinstance(node, (bool, int, float, str)) and walked:
                    section = ".".join(walked)
                    whole = (
                        f"; write the section whole instead: ~{section} '+{section}={{...}}'"
                        if section_fields(walked) is not None
                        else f"; set it whole: {section}=<value>"
                    )
                    raise UserError(
                        override,
                        f"the config sets {section} to {json.dumps(node)}, a value with no fields to override{whole}",
                    )
                break
            if part not in node:
                raise UserError(".".join(walked + [part]), _missing_field(walked, part, node, override))
            walked.append(part)
            node = node[part]


def _check_removed_path(data: dict[str, Any], override: str) -> None:
    """A `~path` whose path is misspelt, named with a did-you-mean (a path that is right but not there is Hydra's
    to report)."""
    node: Any = data
    walked: list[str] = []
    for part in override[1:].split("=", 1)[0].split("."):
        if not isinstance(node, dict):
            return
        if part not in node:
            known = {str(k) for k in node} | (section_fields(walked) or set())
            if part in known:  # a field the file leaves out
                return
            suggestion = did_you_mean(part, sorted(known))
            if suggestion:
                path = ".".join([*walked, part])
                raise UserError(override, f"unknown field {path}{suggestion}, so there is nothing to remove")
            return
        walked.append(part)
        node = node[part]


def canonical_config(data: dict[str, Any]) -> TrainConfig:
    reject_historical(data)
    return validate(expand_singletons(data))


def typed_override(key: str, value: str) -> str:
    """`key=value` as a user types it in a shell: as it is where Hydra reads the value unquoted, else quoted for
    Hydra and, around the whole, for the shell."""
    if re.fullmatch(UNQUOTED_VALUE, value):
        return f"{key}={value}"
    return f'"{key}={hydra_quoted(value)}"'


def hydra_quoted(value: str) -> str:
    """`value` as a quoted Hydra override value: paths with spaces, letters beyond ASCII, `( ) = , '` parse as
    themselves (a backslash escapes only where it precedes a quote or ends the string)."""
    escaped = re.sub(r"(\\*)'", lambda match: match.group(1) * 2 + "\\'", value)
    return "'" + re.sub(r"(\\+)$", lambda match: match.group(1) * 2, escaped) + "'"


def run_hydra(
    entry: TrainEntry,
    overrides: Overrides,
    multirun: bool,
    sweep_dir: Path,
    task: Callable[[DictConfig], Any],
    settings: tuple[str, ...] = (),
) -> None:
    """Hand the command to hydra.main: Hydra runs `task` once per job (in this process, or through a launcher).

    `settings` are further `hydra.*` overrides of the command itself (not of the job's config).
    """
    import hydra

    register_entry(entry)
    argv = ["sequifier-train", "--config-name", ENTRY_NAME]
    if multirun:
        argv.append("--multirun")
    argv += [
        SEARCH_PATH,
        "hydra.job.name=train",
        f"hydra.sweep.dir={hydra_quoted(str(sweep_dir))}",
        "hydra.job.config.override_dirname.exclude_keys=[" + ",".join(overrides.unswept_keys) + "]",
    ]
    unresolved_sweep_folder = lambda o: o.lstrip("+").split("=", 1)[0] == "hydra.sweep.dir"  # `sweep_dir` resolved it
    argv += [*settings, *(o for o in overrides.all if not unresolved_sweep_folder(o))]
    saved = sys.argv
    sys.argv = argv
    try:
        hydra.main(version_base="1.3", config_path=None)(task)()
    finally:
        sys.argv = saved
