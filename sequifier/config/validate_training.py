"""Rules of global_training, training_plan and evaluation: windows, optimization, schedules, references."""

from __future__ import annotations

from typing import Any

from sequifier.config.errors import did_you_mean
from sequifier.config.schema import LAYER_DTYPES, LAYER_TYPES, TrainConfig, default_call
from sequifier.config.typed import ProblemList

POSITIVE_INTEGERS = (
    "context_length",
    "batch_size",
    "inference_batch_size",
    "accumulation_steps",
    "target_offset",
    "world_size",
)
POSITIVE_OPTIONAL = (
    "window_stride",
    "max_tokens_per_pass",
    "gradient_clip",
    "save_interval_epochs",
    "save_interval_batches",
    "save_interval_minutes",
    "save_latest_interval_minutes",
    "early_stopping_patience",
    "num_threads",
)
EPOCH_SCHEDULE_ARGUMENT = "total_steps"
ONE_CYCLE_PRODUCT = "global_training.scheduler.epochs x steps_per_epoch"  # torch's other spelling of total_steps
FLOAT32_LARGEST = 3.4028234663852886e38
MAX_THREADS = 4096
OPTIMIZERS = ("AdamW", "Adam", "SGD", "RMSprop", "Adagrad", "NAdam", "RAdam")
SCHEDULERS = (
    "StepLR",
    "MultiStepLR",
    "ExponentialLR",
    "CosineAnnealingLR",
    "OneCycleLR",
    "LinearLR",
    "ConstantLR",
    "PolynomialLR",
    "CosineAnnealingWarmRestarts",
)


def check_global_training(config: TrainConfig, problems: ProblemList) -> None:
    training = config.global_training
    for name in POSITIVE_INTEGERS:
        if getattr(training, name) < 1:
            problems.add(f"global_training.{name}", f"must be at least 1, got {getattr(training, name)}")
    for name in POSITIVE_OPTIONAL:
        value = getattr(training, name)
        if value is not None and value <= 0:
            problems.add(f"global_training.{name}", f"must be positive, got {value}")
    if not 0 < training.learning_rate <= FLOAT32_LARGEST:
        problems.add(
            "global_training.learning_rate",
            f"must be positive and at most {FLOAT32_LARGEST:.4g} (the largest float32), got {training.learning_rate}",
        )
    if training.num_threads is not None and training.num_threads > MAX_THREADS:
        problems.add(
            "global_training.num_threads",
            f"must be at most {MAX_THREADS} threads per process, got {training.num_threads}",
        )
    if training.num_workers is not None and training.num_workers < 0:
        problems.add("global_training.num_workers", f"must be >= 0, got {training.num_workers}")
    if training.distributed and training.data_parallelism == "fsdp" and training.torch_compile == "outer":
        problems.add("global_training.torch_compile", "use inner or none with FSDP")
    if training.distributed and training.data_parallelism == "ddp" and training.torch_compile == "inner":
        problems.add("global_training.torch_compile", "use outer or none with DDP")
    _check_layer_type_dtypes(config, problems)
    if training.distributed and training.max_tokens_per_pass is not None:
        problems.add(
            "global_training.max_tokens_per_pass",
            "must be null with distributed: true (each rank runs a microbatch in one pass, so that the ranks' "
            "collectives stay in step); a smaller batch_size holds fewer activations per process",
        )
    if training.world_size > 1 and not training.distributed:
        problems.add("global_training.world_size", f"{training.world_size} processes need distributed: true")
    if training.resume.policy == "required" and not training.resume.checkpoint_path:
        problems.add(
            "global_training.resume.checkpoint_path",
            "is required with policy required: the checkpoint to continue from",
        )
    _check_call("optimizer", training.optimizer, "global_training.optimizer", problems)
    if training.scheduler is not None:
        _check_call("scheduler", training.scheduler, "global_training.scheduler", problems)
        _check_schedule_duration(config, problems)


def _check_layer_type_dtypes(config: TrainConfig, problems: ProblemList) -> None:
    training = config.global_training
    where = "global_training.layer_type_dtypes"
    if not training.layer_type_dtypes:
        return  # an empty mapping sets no layer's dtype
    if training.distributed and training.data_parallelism == "fsdp":
        problems.add(where, "must be null with FSDP; use layer_autocast for FSDP mixed precision")
    for layer_type, dtype in training.layer_type_dtypes.items():
        if layer_type not in LAYER_TYPES:
            problems.add(
                f"{where}.{layer_type}",
                f"unknown layer type; choose from {', '.join(LAYER_TYPES)}" + did_you_mean(layer_type, LAYER_TYPES),
            )
        if dtype not in LAYER_DTYPES:
            problems.add(
                f"{where}.{layer_type}",
                f"{dtype!r} is not a parameter dtype; choose one of {', '.join(LAYER_DTYPES)}"
                + did_you_mean(str(dtype), LAYER_DTYPES),
            )


def _check_call(kind: str, call: dict[str, Any], where: str, problems: ProblemList) -> None:
    """The class name; its keyword arguments are checked against torch by training.capabilities."""
    names = OPTIMIZERS if kind == "optimizer" else SCHEDULERS
    name = call.get("name")
    if name is None:
        default = default_call(kind)
        spelled = " ".join(f"+{where}.{key}={value}" for key, value in default.items() if key not in call)
        given = (
            f"; this block holds only {', '.join(map(str, call))}, and a block replaces the default whole: "
            f"to keep the default add {spelled}"
        )
        problems.add(f"{where}.name", f"required: the torch {kind} class, one of {', '.join(names)}{given}")
    elif name not in names:
        problems.add(
            f"{where}.name",
            f"{name!r} is not allowed; choose one of {', '.join(names)}" + did_you_mean(str(name), names),
        )


def given_schedule_length(scheduler: dict[str, Any] | None) -> tuple[str, Any] | None:
    """The length a scheduler's config gives it, with the path that names it: `total_steps`, or OneCycleLR's
    `epochs` x `steps_per_epoch` (torch's other spelling of that length); None where sequifier sets the length."""
    if not scheduler:
        return None
    if scheduler.get(EPOCH_SCHEDULE_ARGUMENT) is not None:
        return f"global_training.scheduler.{EPOCH_SCHEDULE_ARGUMENT}", scheduler[EPOCH_SCHEDULE_ARGUMENT]
    epochs, steps_per_epoch = scheduler.get("epochs"), scheduler.get("steps_per_epoch")
    if scheduler.get("name") == "OneCycleLR" and _positive_integer(epochs) and _positive_integer(steps_per_epoch):
        return ONE_CYCLE_PRODUCT, epochs * steps_per_epoch
    return None


def _positive_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _check_one_cycle_spelling(scheduler: dict[str, Any], problems: ProblemList) -> None:
    """OneCycleLR's `epochs` and `steps_per_epoch` give its length together (their product) and only without
    `total_steps`, which torch takes first: one of them alone, or beside `total_steps`, would be ignored."""
    given = [name for name in ("epochs", "steps_per_epoch") if scheduler.get(name) is not None]
    if scheduler.get("name") != "OneCycleLR" or not given:
        return
    where = f"global_training.scheduler.{given[0]}"
    if scheduler.get(EPOCH_SCHEDULE_ARGUMENT) is not None:
        problems.add(
            where,
            f"OneCycleLR takes {EPOCH_SCHEDULE_ARGUMENT} before epochs x steps_per_epoch, so this would be ignored; "
            "give its length one way",
        )
    elif len(given) == 1:
        problems.add(
            where,
            "OneCycleLR's length is epochs x steps_per_epoch, so give both (or total_steps, or neither: sequifier "
            "then sets the length)",
        )
    else:
        for name in given:
            if not _positive_integer(scheduler[name]):
                problems.add(
                    f"global_training.scheduler.{name}", f"must be a positive integer, got {scheduler[name]!r}"
                )


def _check_schedule_duration(config: TrainConfig, problems: ProblemList) -> None:
    training = config.global_training
    _check_one_cycle_spelling(training.scheduler, problems)
    given = given_schedule_length(training.scheduler)
    if given is None or training.scheduler_step_on != "epoch":
        return
    where, total = given
    if training.reset_optimization_on_phase:
        problems.add(
            where,
            (
                "do not set it for an epoch-stepped scheduler in reset mode: "
                "each phase's scheduler lasts that phase's epochs"
            ),
        )
        return
    epochs = sum(phase.epochs for phase in config.training_plan.phases)
    if total != epochs:
        problems.add(
            where, f"{total} must equal the sum of all phase epochs ({epochs}) for a continuous epoch-stepped scheduler"
        )


def config_warnings(config: TrainConfig) -> list[str]:
    """Valid but easily misread settings, said once before training."""
    training = config.global_training
    scheduler = training.scheduler or {}
    warnings = []
    given = given_schedule_length(scheduler)
    if training.scheduler_step_on == "batch" and training.reset_optimization_on_phase and given is not None:
        warnings.append(
            f"{given[0]}: {given[1]} steps apply to each phase separately (reset_optimization_on_phase is true)"
        )
    if training.resume.policy == "never" and training.resume.checkpoint_path:
        warnings.append(
            "global_training.resume.checkpoint_path: is not read, since global_training.resume.policy is never"
        )
    if config.evaluation and config.evaluation.monitor and config.evaluation.monitor.mode == "max":
        warnings.append(
            "evaluation.monitor.mode is max: the best model is the epoch of the highest validation loss, the "
            "worst one (a lower loss is better); mode: min keeps the lowest"
        )
    warnings += _idle_export_settings(config) + _idle_fsdp_settings(training)
    return warnings + _idle_selection_settings(config) + _unused_datasets(config) + _unused_interfaces(config)


def _idle_fsdp_settings(training) -> list[str]:
    """FSDP settings of a run that does not use FSDP."""
    fsdp = training.distributed and training.data_parallelism == "fsdp"
    idle = []
    if training.layer_autocast and not fsdp:
        idle.append(
            "global_training.layer_autocast has no effect here: it sets FSDP's mixed-precision compute dtype "
            "(bfloat16) and this run does not use FSDP; global_training.autocast enables mixed precision"
        )
    if training.data_parallelism == "fsdp" and not training.distributed:
        idle.append(
            "global_training.data_parallelism fsdp has no effect here: this run is one process "
            "(global_training.distributed is false); set distributed: true to shard the model across processes"
        )
    if training.fsdp_cpu_offload and not fsdp:
        idle.append("global_training.fsdp_cpu_offload has no effect here: this run does not use FSDP")
    return idle


def _idle_export_settings(config: TrainConfig) -> list[str]:
    """Export settings that leave a run with no model files, or that nothing reads."""
    if not (config.export_onnx or config.export_pt):
        return ["export_onnx and export_pt are both false: the run exports no model, only its checkpoints"]
    if not (config.export_generative_model or config.export_embedding_model):
        return ["export_generative_model and export_embedding_model are both false: the run exports no model"]
    if config.export_with_dropout and not config.export_onnx:
        return ["export_with_dropout: only ONNX export reads it, and export_onnx is false"]
    return []


def _unused_interfaces(config: TrainConfig) -> list[str]:
    """Interfaces no dataset names: checked, but neither built nor trained nor exported."""
    named = {dataset.model_interface for dataset in config.dataset_training.values()}
    return [
        f"model.interfaces.{name}: no dataset's model_interface names it, so it is not built, trained or exported"
        for name in config.model.interfaces
        if name not in named
    ]


def _unused_datasets(config: TrainConfig) -> list[str]:
    """Datasets no phase trains and no evaluation reads: their models are exported, their metric files stay empty."""
    sources = [s.source for phase in config.training_plan.phases for s in phase.sources]
    sources += [s.source for s in config.evaluation.sources] if config.evaluation else []
    used = {source.split(".", 1)[0] for source in sources}
    return [
        f"dataset_training.{name}: no phase trains it and no evaluation reads it; its model files are exported, "
        "its metric files stay empty"
        for name in config.dataset_training
        if name not in used
    ]


def _idle_selection_settings(config: TrainConfig) -> list[str]:
    """Selection settings a phase's mode never reads: a sequential phase selects nothing, and only weighted_random
    reads the weights."""
    warnings = []
    for index, phase in enumerate(config.training_plan.phases):
        where = f"training_plan.phases[{index}]"
        if phase.mode == "sequential" and phase.selection != "round_robin":
            warnings.append(f"{where}.selection: {phase.selection} does nothing in a sequential phase")
        for number, source in enumerate(phase.sources):
            if phase.mode == "sequential" and source.batches_per_selection != 1:
                warnings.append(f"{where}.sources[{number}].batches_per_selection: does nothing in a sequential phase")
            if source.weight != 1.0 and (phase.mode == "sequential" or phase.selection != "weighted_random"):
                warnings.append(f"{where}.sources[{number}].weight: only selection weighted_random reads it")
    return warnings


def check_plan_and_evaluation(config: TrainConfig, problems: ProblemList) -> None:
    phases = config.training_plan.phases
    if not phases:
        problems.add("training_plan.phases", "at least one phase is required")
    names = [phase.name for phase in phases]
    for i, phase in enumerate(phases):
        path = f"training_plan.phases[{i}]"
        if names.count(phase.name) > 1:
            problems.add(f"{path}.name", f"phase name {phase.name!r} is used more than once")
        if not phase.name.strip() or not phase.name.isprintable():
            problems.add(
                f"{path}.name",
                f"{phase.name!r} cannot name a phase in logs and the metric files' phase column: it needs a visible "
                "character and no control character",
            )
        if phase.epochs < 1:
            problems.add(f"{path}.epochs", f"must be at least 1, got {phase.epochs}")
        if not phase.sources:
            problems.add(f"{path}.sources", "at least one source is required")
        _check_overlaps([s.source for s in phase.sources], f"{path}.sources", problems)
        for j, source in enumerate(phase.sources):
            check_source(config, source.source, f"{path}.sources[{j}].source", problems)
            if source.batches_per_selection < 1:
                problems.add(
                    f"{path}.sources[{j}].batches_per_selection",
                    f"must be at least 1, got {source.batches_per_selection}",
                )
            if source.weight <= 0:
                problems.add(f"{path}.sources[{j}].weight", f"must be positive, got {source.weight}")
    _check_evaluation(config, problems)


def _check_overlaps(sources: list[str], where: str, problems: ProblemList) -> None:
    """A training source listed twice, or a dataset next to one of its parts, would be read twice per epoch.

    Evaluation may list both: it reports each source's metrics."""
    for j, source in enumerate(sources):
        for earlier in sources[:j]:
            if source == earlier:
                problems.add(f"{where}[{j}].source", f"{source!r} is listed more than once")
            elif source.startswith(earlier + ".") or earlier.startswith(source + "."):
                problems.add(
                    f"{where}[{j}].source",
                    f"{source!r} and {earlier!r} overlap (a dataset stands for all its parts), so the part would be "
                    "read twice; list the dataset or its parts",
                )


def _check_evaluation(config: TrainConfig, problems: ProblemList) -> None:
    training = config.global_training
    evaluation = config.evaluation
    if evaluation is None:
        if training.early_stopping_patience is not None:
            problems.add("global_training.early_stopping_patience", "needs evaluation to monitor a validation metric")
        return
    if not evaluation.sources:
        problems.add("evaluation.sources", "at least one source is required (or set evaluation: false)")
    sources = [s.source for s in evaluation.sources]
    for j, source in enumerate(sources):
        check_source(config, source, f"evaluation.sources[{j}].source", problems)
        if sources.count(source) > 1:
            problems.add(f"evaluation.sources[{j}].source", f"{source!r} is listed more than once")
    validation_based = (
        config.export_onnx
        or config.export_pt
        or training.early_stopping_patience is not None
        or training.save_interval_val_loss
    )
    if evaluation.monitor is None:
        if len(sources) > 1 and validation_based:
            problems.add(
                "evaluation.monitor",
                "required with several evaluation sources, to choose the best model and stop early: e.g. {source: "
                + sources[0]
                + ", metric: loss, mode: min}",
            )
    elif evaluation.monitor.source not in sources:
        problems.add(
            "evaluation.monitor.source",
            f"{evaluation.monitor.source!r} is not an evaluation source ({', '.join(sources)})"
            + did_you_mean(evaluation.monitor.source, sources),
        )


def check_source(config: TrainConfig, source: str, where: str, problems: ProblemList) -> None:
    dataset_name, _, part = source.partition(".")
    dataset = config.dataset_training.get(dataset_name)
    if dataset is None:
        problems.add(
            where,
            f"unknown dataset {dataset_name!r}"
            + did_you_mean(dataset_name, config.dataset_training)
            + f"; datasets: {', '.join(config.dataset_training)}",
        )
    elif part and part not in dataset.parts:
        problems.add(
            where,
            f"unknown part {part!r} of dataset {dataset_name!r}"
            + did_you_mean(part, dataset.parts)
            + f"; parts: {', '.join(dataset.parts)}",
        )
