"""Hydra composition of a config FILE with overrides and shipped presets."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import run_sequifier, tiny_train_config, write_yaml

from sequifier.config.compose import canonical_config, compose_config, parse_overrides
from sequifier.config.errors import UserError


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    return write_yaml(tmp_path / "configs" / "train.yaml", tiny_train_config())


def test_overrides_win_over_the_file_and_schema_defaults_fill_the_rest(config_file: Path):
    data = compose_config(config_file, ["global_training.batch_size=5", "global_training.accumulation_steps=3"])
    config = canonical_config(data)
    assert config.global_training.batch_size == 5
    assert config.global_training.accumulation_steps == 3
    assert config.global_training.context_length == 8


def test_a_shipped_preset_replaces_the_backbone(config_file: Path):
    config = canonical_config(compose_config(config_file, ["model/backbone=base"]))
    assert config.model.backbone.architecture.dim_model == 128
    assert config.model.backbone.architecture.num_layers == 6


def test_unknown_preset_is_a_user_error(config_file: Path):
    with pytest.raises(UserError, match="there is no preset 'huge' in model/backbone; the presets of") as caught:
        compose_config(config_file, ["model/backbone=huge"])
    assert caught.value.where == "model/backbone=huge"


def test_adding_a_preset_choice_the_config_has_is_named_by_the_override(config_file: Path):
    with pytest.raises(UserError) as caught:
        compose_config(config_file, ["+model/backbone=base"])
    assert caught.value.where == "+model/backbone=base"
    assert caught.value.problem == (
        "every train config has a place for a preset of model/backbone, so + has nothing to add; choose the preset "
        "without +: model/backbone=base"
    )


def test_force_adding_a_preset_choice_is_named_by_the_override(config_file: Path):
    with pytest.raises(UserError) as caught:
        compose_config(config_file, ["++model/backbone=base"])
    assert caught.value.where == "++model/backbone=base"
    assert caught.value.problem == "++ adds a field; a preset is chosen without it: model/backbone=base"


@pytest.mark.parametrize("value", ["${oops", "a${oops", "${oc.env:X"])
def test_an_interpolation_a_file_leaves_unclosed_is_named_by_the_file_and_key(tmp_path: Path, value: str):
    config = tiny_train_config() | {"model_name": value}
    entry = write_yaml(tmp_path / "configs" / "train.yaml", config)
    with pytest.raises(UserError) as caught:
        compose_config(entry, [])
    assert caught.value.where == f"{entry}: model_name"
    assert caught.value.problem.startswith("holds an interpolation that cannot be parsed (")


def test_sweep_overrides_expand_to_every_combination():
    parsed = parse_overrides(["a=1,2", "b=x,y", "c=3"])
    assert parsed.swept_keys == ["a", "b"]
    assert len(parsed.combinations) == 4
    assert ["a=1", "b=y", "c=3"] in parsed.combinations


@pytest.mark.parametrize(
    "override, problem",
    [
        ("seed=range(0,0)", "lists no values"),
        ("seed=range(5,1)", "lists no values"),
        ("seed=range(0,3,0)", "cannot be listed as jobs (range() arg 3 must not be zero)"),
        ("lr=interval(0.1,0.2)", "cannot be listed as jobs"),
        ("model_name=glob(*)", "glob() is not supported; list the values (or presets)"),
    ],
)
def test_sweeps_that_list_no_jobs_are_refused_naming_the_override(override: str, problem: str):
    with pytest.raises(UserError, match=problem.replace("(", r"\(").replace(")", r"\)")) as caught:
        parse_overrides([override])
    assert caught.value.where == override


@pytest.mark.parametrize(
    "overrides, named",
    [
        (["~global_training.gradient_clip", "global_training.gradient_clip=0.5,2"], "~global_training.gradient_clip"),
        (["global_training.gradient_clip=0.5,2", "~global_training.gradient_clip"], "~global_training.gradient_clip"),
        (["seed=1,2", "seed=3"], "seed=3"),
        (["seed=1,2", "seed=1,2"], "seed=1,2"),
        (["+phases[0].epochs=1,2", "phases.0.epochs=3"], "phases.0.epochs=3"),
        (["~global_training.gradient_clip", "+global_training.gradient_clip=0.5,2"], "~global_training.gradient_clip"),
    ],
)
def test_a_swept_field_given_again_is_refused_naming_it(overrides: list[str], named: str):
    """The later would undo the other: jobs that are one run, or a removal the sweep undoes."""
    with pytest.raises(UserError, match="is swept by .* on the same command line") as caught:
        parse_overrides(overrides)
    assert caught.value.where == named
    assert parse_overrides(["seed=1,2", "global_training.gradient_clip=0.5"]).swept_keys == ["seed"]


@pytest.mark.parametrize(
    "overrides",
    [
        ["global_training.batch_size=32", "global_training.batch_size=16"],
        ["seed=1", "~seed"],
        ["model/backbone=tiny", "~model/backbone"],
        ["global_training/optimizer=sgd", "global_training/optimizer=adam"],
        ["+phases[0].epochs=1", "phases.0.epochs=3"],
        ["~global_training.optimizer", "+global_training.optimizer={name: SGD}", "+global_training.optimizer={}"],
        ["global_training.resume.policy=never", "global_training.resume={policy: if_exists}"],
        ["global_training.resume={policy: never}", "global_training.resume.policy=if_exists"],
        ["training_plan.phases.0.epochs=2", "training_plan.phases=[{name: main}]"],
        ["global_training.resume.policy=never", "~global_training.resume"],
        ["~global_training.gradient_clip", "+global_training.gradient_clip=0.5"],
    ],
)
def test_a_field_or_group_given_twice_is_refused_naming_the_later(overrides: list[str]):
    """Hydra would apply the later one and drop the other without a word."""
    with pytest.raises(UserError, match=r"is given twice on the command line \(also by ") as caught:
        parse_overrides(overrides)
    assert caught.value.where == overrides[-1]


@pytest.mark.parametrize(
    "overrides",
    [
        ["~global_training.optimizer", "+global_training.optimizer={name: SGD, momentum: 0.9}"],
        ["~global_training.resume", "++global_training.resume={policy: never}"],
        ["global_training.resume={policy: never}", "global_training.resume.checkpoint_path=x.pt"],
        ["model/backbone=tiny", "model.backbone.architecture.dim_model=16"],
    ],
)
def test_a_mapping_replaced_or_completed_and_a_preset_refined_are_no_field_given_twice(overrides: list[str]):
    assert parse_overrides(overrides).all == overrides


def test_cfg_job_prints_the_expanded_canonical_config(reference_project: Path):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    result = run_sequifier(["train", "--cfg", "job"], reference_project)
    assert result.returncode == 0, result.stderr
    printed = yaml.safe_load(result.stdout)
    assert "default" in printed["model"]["interfaces"]
    assert (
        printed["dataset_training"]["default"]["parts"]["default"]["metadata_config_path"]
        == "configs/metadata_configs/events.json"
    )
    assert printed["training_plan"]["phases"][0]["name"] == "train"


@pytest.mark.parametrize("folder", ["hydra.run.dir=", "hydra.sweep.dir="])
def test_cfg_job_refuses_the_record_folder_a_run_would_refuse(reference_project: Path, folder: str):
    """It prints the validated config: what a run refuses before any job, --cfg job refuses too."""
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    sweep = ["-m", "seed=1,2"] if folder.startswith("hydra.sweep") else []
    result = run_sequifier(["train", "--cfg", "job", *sweep, folder], reference_project)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: {folder[:-1]}: is empty; give the folder for the run's record (it would be the working folder)"
    )


def test_an_empty_train_config_says_so(tmp_path: Path):
    empty = tmp_path / "train.yaml"
    empty.write_text("# nothing yet\n")
    with pytest.raises(UserError, match="is empty: a train config names the model") as caught:
        compose_config(empty, [])
    assert caught.value.where == str(empty)


def test_an_index_as_error_messages_spell_it_is_an_override_path():
    parsed = parse_overrides(["training_plan.phases[0].epochs=2", "+x=[1,2]"])
    assert parsed.all == ["training_plan.phases.0.epochs=2", "+x=[1,2]"]


def test_a_misspelt_preset_group_is_named_with_a_did_you_mean(config_file: Path):
    with pytest.raises(UserError, match=r"no preset group 'model/backbonee' \(did you mean 'model/backbone'") as caught:
        compose_config(config_file, ["model/backbonee=tiny"])
    assert caught.value.where == "model/backbonee=tiny"


@pytest.mark.parametrize(
    "override, problem",
    [
        ("model_name=${nowhere}", "Interpolation key 'nowhere' not found"),
        ("model_name=${oc.env:SEQUIFIER_UNSET_VARIABLE}", "SEQUIFIER_UNSET_VARIABLE"),
        ("model_name=${model_name}", "Recursive interpolation detected"),
        ("model_name=m${hydra:job.num}", "${hydra:...} is not available in a train config or its overrides"),
    ],
)
def test_an_interpolation_an_override_cannot_resolve_is_named_by_the_override(config_file: Path, override, problem):
    with pytest.raises(UserError) as caught:
        compose_config(config_file, [override])
    assert caught.value.where == override
    assert caught.value.problem.startswith("cannot resolve the interpolation: ") and problem in caught.value.problem
    assert "full_key" not in caught.value.problem


def test_an_interpolation_a_file_cannot_resolve_is_named_by_the_file_and_key_that_set_it(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tiny_train_config()
    seed = config.pop("seed", None)
    config["additional_config_paths"] = ["configs/extra.yaml"]
    entry = write_yaml(tmp_path / "configs" / "train.yaml", config)
    fragment = write_yaml(tmp_path / "configs" / "extra.yaml", {"seed": "${nowhere}"})
    with pytest.raises(UserError, match="cannot resolve the interpolation: Interpolation key 'nowhere'") as caught:
        compose_config(entry, [])
    assert caught.value.where == f"{fragment.resolve()}: seed"
    config["model_name"] = "${nowhere}"
    if seed is not None:
        config["seed"] = seed
    write_yaml(entry, config | {"additional_config_paths": []})
    with pytest.raises(UserError, match="cannot resolve the interpolation") as caught:
        compose_config(entry, [])
    assert caught.value.where == f"{entry}: model_name"


@pytest.mark.parametrize("in_file", [None, 1.0])
def test_tilde_removes_a_field_whose_default_is_null_whatever_the_file_holds(tmp_path: Path, in_file):
    config = tiny_train_config()
    config["global_training"]["gradient_clip"] = in_file
    config_file = write_yaml(tmp_path / "configs" / "train.yaml", config)
    overrides = parse_overrides(["~global_training.gradient_clip", "~global_training.max_tokens_per_pass"])
    assert canonical_config(compose_config(config_file, overrides.all)).global_training.gradient_clip is None
    assert overrides.combinations == [overrides.all]


@pytest.mark.parametrize(
    "override, misspelt, meant",
    [
        ("~global_training.gradient_clipp", "global_training.gradient_clipp", "gradient_clip"),
        ("~global_trainin.batch_size", "global_trainin", "global_training"),
        ("~model.backbone.architectur.dim_model", "model.backbone.architectur", "architecture"),
    ],
)
def test_tilde_on_a_misspelt_path_names_it_with_a_did_you_mean(config_file: Path, override, misspelt, meant):
    with pytest.raises(UserError) as caught:
        compose_config(config_file, parse_overrides([override]).all)
    assert caught.value.where == override
    assert caught.value.problem == f"unknown field {misspelt} (did you mean '{meant}'?), so there is nothing to remove"


def test_an_override_the_lexer_cannot_read_says_to_quote_the_value():
    with pytest.raises(UserError, match="needs quotes around it: key='value'"):
        parse_overrides(["model_name=модель✓"])
    assert parse_overrides(["model_name='модель✓'"]).all == ["model_name='модель✓'"]


@pytest.mark.parametrize(
    "override, why",
    [
        ("seed=range(a,3)", "range(a,3): mismatch type argument start: str is incompatible with Union[int, float]"),
        ("seed=rnage(1,3)", "rnage(1,3): Unknown function 'rnage'; Available: bool,choice,"),
        ("seed=choice()", "choice(): empty choice is not legal"),
    ],
)
def test_a_sweep_function_that_fails_says_why_and_how_functions_are_written(override, why):
    with pytest.raises(UserError) as caught:
        parse_overrides([override])
    assert why in caught.value.problem and "key=range(0,4) or key=choice(a,b)" in caught.value.problem
    assert "letters, digits" not in caught.value.problem


@pytest.mark.parametrize("override", ["sëed=3", "dataset.criterion.événement=MSELoss", "+glob*al=1"])
def test_an_override_key_the_lexer_cannot_read_is_named_not_blamed_on_its_value(override):
    with pytest.raises(UserError, match="Hydra reads override keys of ASCII letters, digits, _ and -") as caught:
        parse_overrides([override])
    assert caught.value.where == override and "quotes" not in caught.value.problem
    assert parse_overrides(["model/backbone=small", "+dataset.parts[0].x=1"]).all


@pytest.mark.parametrize(
    "override, problem",
    [
        (
            "model.backbone.architecture=[1,2]",
            "at model.backbone.architecture: a list and a mapping of fields do not replace one another",
        ),
        (
            "model.interface.input_columns.5=x",
            "at model.interface.input_columns[5]: the index is past the list's end",
        ),
    ],
)
def test_an_override_omegaconf_cannot_merge_is_named_with_the_reason(config_file: Path, override, problem):
    with pytest.raises(UserError) as caught:
        compose_config(config_file, [override])
    assert caught.value.where == override and problem in caught.value.problem


def test_removing_a_whole_section_is_refused_naming_the_override(config_file: Path):
    with pytest.raises(UserError, match="model is a section every train config needs") as caught:
        compose_config(config_file, parse_overrides(["~model"]).all)
    assert caught.value.where == "~model"


@pytest.mark.parametrize(
    "override, advice, works",
    [
        (
            "global_training.scheduler.gamma=0.5",
            "++global_training.scheduler.gamma=0.5",
            ["global_training/scheduler=step"],
        ),
        ("global_training.scheduler=null", "+global_training.scheduler=null", []),
        ("~global_training.scheduler", "+global_training.scheduler=null", []),
        ("global_training.optimizer={name: SGD}", "+global_training.optimizer={name: SGD}", []),
    ],
)
def test_a_preset_filled_section_the_file_leaves_out_gets_advice_that_works(config_file, override, advice, works):
    with pytest.raises(UserError) as caught:
        compose_config(config_file, parse_overrides([override]).all)
    assert advice in caught.value.problem and "one of" in caught.value.problem
    compose_config(config_file, parse_overrides([*works, advice]).all)


def test_a_mapping_the_file_holds_is_merged_and_the_advice_replaces_or_extends_it(tmp_path: Path):
    config = tiny_train_config()
    config["global_training"]["optimizer"] = {"name": "AdamW", "weight_decay": 0.01}
    config_file = write_yaml(tmp_path / "train.yaml", config)
    with pytest.raises(UserError) as caught:
        compose_config(config_file, ["global_training.optimizer={name: SGD, momentum: 0.9}"])
    assert "~global_training.optimizer +global_training.optimizer={name: SGD, momentum: 0.9}" in caught.value.problem
    replaced = compose_config(
        config_file, ["~global_training.optimizer", "+global_training.optimizer={name: SGD, momentum: 0.9}"]
    )
    assert replaced["global_training"]["optimizer"] == {"name": "SGD", "momentum": 0.9}


def test_an_optimizers_lr_is_pointed_to_the_learning_rate(config_file):
    with pytest.raises(UserError) as caught:
        compose_config(config_file, ["global_training.optimizer.lr=0.01"])
    assert caught.value.problem.endswith("sequifier sets its lr from global_training.learning_rate: set that")


@pytest.mark.parametrize(
    "section, value, shown",
    [
        (("global_training",), [], "a list"),
        (("model", "backbone", "architecture", "attention"), [1, 2], "a list"),
        (("training_plan",), 3, "3"),
    ],
)
def test_a_list_or_scalar_where_a_section_belongs_is_named_by_its_path(tmp_path: Path, section, value, shown):
    config = tiny_train_config()
    node = config
    for key in section[:-1]:
        node = node.setdefault(key, {})
    node[section[-1]] = value
    path = write_yaml(tmp_path / "train.yaml", config)
    with pytest.raises(UserError) as caught:
        compose_config(path, [])
    assert caught.value.where == f"{path}: {'.'.join(section)}"
    assert caught.value.problem == f"expected a mapping of fields (a section of the config), got {shown}"


@pytest.mark.parametrize(
    "override, problem",
    [
        ("~training_plan", "training_plan is a section every train config needs, so it cannot be removed"),
        (
            "~global_training/optimizer",
            "no preset of global_training/optimizer is chosen, so there is none to remove and "
            "~global_training/optimizer would change nothing; change the file's fields, or choose a preset with "
            "global_training/optimizer=<preset> (one of adam, adamw, sgd)",
        ),
    ],
)
def test_removing_a_preset_group_nothing_chose_is_refused(config_file: Path, override: str, problem: str):
    with pytest.raises(UserError) as caught:
        compose_config(config_file, [override])
    assert caught.value.where == override and caught.value.problem.startswith(problem)
    assert compose_config(config_file, ["global_training/optimizer=adamw", "~global_training/optimizer"])


@pytest.mark.parametrize(
    "override, problem",
    [
        ("global_training=[]", "global_training is a section, set field by field (global_training.<field>=...)"),
        ("+model=x", "model is a section, set field by field (model.<field>=...) or by the presets of its groups"),
        ("+training_plan=[]", "choose one preset of training_plan (one of smoke), not a list"),
        ("evaluation.monitor.mode=max", "the config sets evaluation to true, a value with no fields to override"),
    ],
)
def test_overrides_hydra_would_take_as_choosing_nothing_are_refused(tmp_path: Path, override: str, problem: str):
    path = write_yaml(tmp_path / "train.yaml", tiny_train_config(evaluation=True))
    with pytest.raises(UserError) as caught:
        compose_config(path, [override])
    assert caught.value.where == override and caught.value.problem.startswith(problem)


def test_an_override_key_too_long_for_hydras_file_lookup_is_refused_in_one_line():
    key = "model.interface.ingestion.feature_embedding_dims." + "e" * 245
    with pytest.raises(UserError, match="an override key of 294 bytes cannot be given on the command line"):
        parse_overrides([f"{key}=12"])
    assert parse_overrides([f"{key[:240]}=12"]).all == [f"{key[:240]}=12"]


@pytest.mark.parametrize(
    "override, problem",
    [
        ("+seed=5", "seed is in the config already, and + adds a field that is not; set it: seed=5"),
        ("hydra.job.env_set.FOO=1", "there is no field hydra.job.env_set.FOO to set; +hydra.job.env_set.FOO=<value>"),
        ("model.interface.input_columns.x=1", "'x' is no index of a list: a list's items are numbered from 0"),
        ("seed.x=1", "the config sets seed to 1010, a value with no fields to override; set it whole: seed=<value>"),
        (
            "dataset_training/freeze@dataset.freeze=backbone",
            "a preset placed with @ adds a field the config does not have, which takes a leading +: +dataset_training",
        ),
        ("~model.interface.input_columns.5", "~ removes a field, not an item of a list; set the whole list instead"),
        ("~seed=5", "~seed=5 removes seed only where its value is 5, and it is 1010; ~seed removes it"),
        (
            "~global_training.optimizer",
            "global_training.optimizer is not in the config file, so its default preset "
            "applies; it cannot be left out; choose a preset with global_training/optimizer=<preset>",
        ),
        (
            "~global_training.scheduler",
            "global_training.scheduler is not in the config file, so its default preset "
            "applies; write +global_training.scheduler=null for none",
        ),
    ],
)
def test_command_line_mistakes_are_named_by_their_override_with_a_fix_that_works(
    tmp_path: Path, override: str, problem: str
):
    path = write_yaml(tmp_path / "train.yaml", tiny_train_config(seed=1010))
    with pytest.raises(UserError) as caught:
        compose_config(path, [override])
    assert caught.value.where == override and caught.value.problem.startswith(problem), caught.value


def test_the_suggested_fixes_compose(tmp_path: Path):
    path = write_yaml(tmp_path / "train.yaml", tiny_train_config(seed=1010))
    assert compose_config(path, ["seed=5", "+global_training.scheduler=null"])["seed"] == 5
    assert compose_config(path, ["+dataset_training/freeze@dataset.freeze=backbone"])


@pytest.mark.parametrize(
    "override, problem",
    [
        ("=5", "an override names its field or preset group before '=': key=value"),
        ("seed", "an override sets a value: seed=<value> (~seed removes a field)"),
        ("seed==5", "holds '=='; an override is written seed=<value>"),
        ("seed:3", "an override sets a value with '=', not ':': seed=3"),
        (".seed=1", "a key is a path of field names joined by single dots (global_training.batch_size): seed=1"),
        (
            "~global_training..lr",
            "a key is a path of field names joined by single dots (global_training.batch_size): ~global_training.lr",
        ),
    ],
)
def test_overrides_without_a_key_or_value_are_refused_as_such(override: str, problem: str):
    with pytest.raises(UserError) as caught:
        parse_overrides([override])
    assert caught.value.where == override and caught.value.problem == problem
