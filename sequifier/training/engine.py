"""The training loop: phases of planned batches, accumulation windows, validation, best/last models and export."""

from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import dataclass

import torch

from sequifier.config.resolve import RunSpec
from sequifier.data.datasets import PartData, load_parts, shuffled_batches, view_shape
from sequifier.data.views import gather_batch
from sequifier.export.artifacts import export_models
from sequifier.model.network import SequifierNetwork, build_network
from sequifier.training.checkpoint import save_checkpoint
from sequifier.training.evaluation import Evaluation, Totals, evaluate_split, summarize
from sequifier.training.freezing import frozen_parameters
from sequifier.training.losses import TargetLosses
from sequifier.training.metrics import MetricsFile, attach_log_file
from sequifier.training.monitor import Monitor
from sequifier.training.optimization import OptimizationLifecycle
from sequifier.training.plan import PlannedBatch, phase_epoch, stream_seed
from sequifier.training.priors import fit_priors

logger = logging.getLogger("sequifier")
PROGRESS_SECONDS = 10.0


@dataclass(frozen=True)
class TrainResult:
    model_name: str
    best_epoch: int
    monitored_loss: float
    final_validation: dict[str, float]
    final_baseline: dict[str, float]
    exported: list[str]


class Trainer:
    """Owns the network, data, optimization lifecycle and metric files of one run."""

    def __init__(self, spec: RunSpec):
        self.spec = spec
        config = spec.config
        self.training = config.global_training
        self.device = torch.device(config.device)
        torch.manual_seed(config.seed)
        self.network: SequifierNetwork = build_network(spec.network).to(self.device)
        self.parts = load_parts(spec)
        fit_priors(self.network, self.parts)
        self.losses = {name: self._target_losses(name) for name in config.dataset_training}
        self.views = {dataset: spec.dataset_view(dataset) for dataset in config.dataset_training}
        self.schedules = [
            [self._schedule(p, e) for e in range(1, phase.epochs + 1)]
            for p, phase in enumerate(config.training_plan.phases)
        ]
        phase_steps = [sum(self._optimizer_steps(schedule) for schedule in epochs) for epochs in self.schedules]
        phase_epochs = [phase.epochs for phase in config.training_plan.phases]
        self.optimization = OptimizationLifecycle(
            list(self.network.parameters()), self.training, phase_epochs, phase_steps
        )
        self.monitor = Monitor(config)
        self.frozen = frozen_parameters(self.network, config)
        self.global_step = 0
        self.pending: list[str] = []  # datasets of the microbatches in the open accumulation window

    def _target_losses(self, dataset_name: str) -> TargetLosses:
        dataset = self.spec.config.dataset_training[dataset_name]
        interface = dataset.model_interface
        columns = self.spec.columns[interface]
        targets = [columns[c] for c in self.spec.config.model.interfaces[interface].target_columns]
        decoder = self.network.interfaces[interface].decoder
        class_ids = {t.name: decoder.class_ids(t.name).cpu() for t in targets if t.kind == "categorical"}
        return TargetLosses(targets, dict(dataset.criterion), dict(dataset.loss_weights or {}), class_ids)

    def _batches(self, part: PartData, phase: int, epoch: int) -> list[torch.Tensor]:
        seed = stream_seed(self.spec.config.seed, "shuffle", phase, epoch, part.spec.dataset, part.spec.part)
        return shuffled_batches(part.train, self.training.batch_size, seed)

    def _schedule(self, phase_index: int, epoch: int) -> list[PlannedBatch]:
        counts = {key: math.ceil(len(part.train) / self.training.batch_size) for key, part in self.parts.items()}
        phase = self.spec.config.training_plan.phases[phase_index]
        return phase_epoch(
            self.spec.config, phase, counts, stream_seed(self.spec.config.seed, "select", phase_index, epoch)
        )

    def _optimizer_steps(self, schedule: list[PlannedBatch]) -> int:
        """Updates one epoch makes: full windows, plus a flush at every dataset change and at the end."""
        steps, window, dataset = 0, 0, None
        for planned in schedule:
            if window and planned.dataset != dataset:
                steps, window = steps + 1, 0
            dataset, window = planned.dataset, window + 1
            if window == self.training.accumulation_steps:
                steps, window = steps + 1, 0
        return steps + (1 if window else 0)

    def run(self) -> TrainResult:
        spec = self.spec
        handler = attach_log_file(spec.logs_dir, spec.model_name)
        self.metrics = {
            name: (
                MetricsFile(view.logs_dir / "training-metrics.csv", spec.run_dir.name),
                MetricsFile(view.logs_dir / "validation-metrics.csv", spec.run_dir.name),
            )
            for name, view in self.views.items()
        }
        try:
            return self._run()
        finally:
            for files in self.metrics.values():
                for metrics_file in files:
                    metrics_file.close()
            logger.removeHandler(handler)
            handler.close()

    def _run(self) -> TrainResult:
        config = self.spec.config
        n_params = sum(p.numel() for p in self.network.parameters())
        views = ", ".join(f"{d}.{p}: {len(part.train)}" for (d, p), part in self.parts.items())
        logger.info("training %s: %d parameters; training views %s", self.spec.model_name, n_params, views)
        best_state, last_epoch, evaluation = None, 0, None
        for phase_index, phase in enumerate(config.training_plan.phases):
            self.optimization.begin_phase(phase_index)
            for epoch in range(1, phase.epochs + 1):
                last_epoch += 1
                training_loss = self._train_epoch(phase_index, epoch, last_epoch)
                evaluation = self._validate(phase.name, last_epoch)
                if self.monitor.update(last_epoch, evaluation, training_loss):
                    best_state = copy.deepcopy(self.network.state_dict())
                interval = self.training.save_interval_epochs
                if interval and last_epoch % interval == 0:
                    self._checkpoint(phase_index, epoch, last_epoch)
                if self.monitor.should_stop(last_epoch):
                    logger.info(
                        "early stopping after epoch %d: no improvement of %s for %d epochs",
                        last_epoch,
                        self.monitor.description,
                        self.training.early_stopping_patience,
                    )
                    return self._finish(best_state, last_epoch, evaluation)
        return self._finish(best_state, last_epoch, evaluation)

    def _train_epoch(self, phase_index: int, epoch: int, global_epoch: int) -> float:
        phase = self.spec.config.training_plan.phases[phase_index]
        schedule = self.schedules[phase_index][epoch - 1]
        batches = {key: self._batches(part, phase_index, epoch) for key, part in self.parts.items()}
        totals = {key: Totals() for key in self.parts}
        self.epoch_learning_rate = self.optimization.learning_rate
        self.network.train()
        started = last_report = time.perf_counter()
        samples = 0
        for number, planned in enumerate(schedule, 1):
            key = (planned.dataset, planned.part)
            if self.pending and self.pending[-1] != planned.dataset:
                self._flush()
            samples += self._microbatch(self.parts[key], batches[key][planned.batch], totals[key])
            self.pending.append(planned.dataset)
            if len(self.pending) == self.training.accumulation_steps:
                self._flush()
            now = time.perf_counter()
            if now - last_report > PROGRESS_SECONDS:
                last_report = now
                rate = number / (now - started)
                logger.info(
                    "phase %s epoch %d batch %d/%d, %.0f samples/s, epoch ETA %.0fs",
                    phase.name,
                    epoch,
                    number,
                    len(schedule),
                    samples / (now - started),
                    (len(schedule) - number) / rate,
                )
        self._flush()
        self.optimization.end_epoch()
        elapsed = max(time.perf_counter() - started, 1e-9)
        return self._log_training(phase.name, global_epoch, totals, samples / elapsed)

    def _microbatch(self, part: PartData, chosen: torch.Tensor, totals: Totals) -> int:
        loss, sums = self.batch_loss(part, chosen)
        if loss.requires_grad:
            loss.backward()
        totals.add(
            Totals(
                loss={n: float(t.detach()) for n, (t, _) in sums.items()},
                count={n: int(c) for n, (_, c) in sums.items()},
            )
        )
        return len(chosen)

    def batch_loss(
        self, part: PartData, chosen: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, tuple[torch.Tensor, torch.Tensor]]]:
        """The optimized loss of training views `chosen` (weighted per-target means of counted targets) and its sums."""
        losses = self.losses[part.spec.dataset]
        interface = self.spec.config.model.interfaces[part.interface]
        split = part.train
        batch = gather_batch(
            split.windows,
            split.window_index[chosen],
            split.end_slot[chosen],
            view_shape(self.spec, part.interface),
            interface.input_columns,
            interface.target_columns,
        )
        inputs = {k: v.to(self.device) for k, v in batch.inputs.items()}
        targets = {k: v.to(self.device) for k, v in batch.targets.items()}
        pad = batch.left_pad_lengths.to(self.device) if batch.left_pad_lengths is not None else None
        outputs = self.network(part.interface, inputs, pad)
        sums = losses.sums(outputs, targets, batch.target_valid.to(self.device))
        means = {name: total / count.clamp(min=1) for name, (total, count) in sums.items()}
        return losses.aggregate(means), sums

    def _flush(self) -> None:
        """Close the accumulation window.

        Drop the dataset's frozen gradients, average over the actual microbatch count, clip, step.
        """
        if not self.pending:
            return
        count, frozen = len(self.pending), self.frozen[self.pending[-1]]
        self.pending = []
        for parameter in self.network.parameters():
            if id(parameter) in frozen:
                parameter.grad = None
            elif parameter.grad is not None and count > 1:
                parameter.grad.div_(count)
        if self.training.gradient_clip:
            torch.nn.utils.clip_grad_norm_(self.network.parameters(), self.training.gradient_clip)
        self.optimization.step()
        self.global_step += 1

    def _common(self, phase: str, dataset: str, part: str, epoch: int) -> dict:
        return dict(
            phase=phase,
            dataset=dataset,
            part=part,
            epoch=epoch,
            global_step=self.global_step,
            learning_rate=self.epoch_learning_rate,
        )

    def _log_training(
        self, phase: str, epoch: int, totals: dict[tuple[str, str], Totals], samples_per_second: float
    ) -> float:
        """Per-part, per-target training losses; returns the mean aggregate over datasets."""
        aggregates = []
        for dataset in self.spec.config.dataset_training:
            losses = self.losses[dataset]
            combined = Totals()
            for (d, part), part_totals in totals.items():
                if d != dataset or not part_totals.count:
                    continue
                combined.add(part_totals)
                means = {t: part_totals.loss[t] / max(part_totals.count[t], 1) for t in part_totals.loss}
                for target, value in means.items():
                    self.metrics[dataset][0].write(
                        **self._common(phase, dataset, part, epoch),
                        target=target,
                        metric="loss",
                        value=value,
                        samples_per_second="",
                    )
            if combined.count:
                means = {t: combined.loss[t] / max(combined.count[t], 1) for t in combined.loss}
                aggregate = float(losses.aggregate(means))
                aggregates.append(aggregate)
                self.metrics[dataset][0].write(
                    **self._common(phase, dataset, "", epoch),
                    target="aggregate",
                    metric="loss",
                    value=aggregate,
                    samples_per_second=samples_per_second,
                )
                logger.info(
                    "epoch %d (%s) %s training loss %.4f, %.0f samples/s",
                    epoch,
                    phase,
                    dataset,
                    aggregate,
                    samples_per_second,
                )
        return sum(aggregates) / len(aggregates) if aggregates else float("nan")

    def _validate(self, phase: str, epoch: int) -> dict[str, Evaluation]:
        """Evaluation of every evaluation source: its parts' totals combined."""
        results = {}
        evaluation = self.spec.config.evaluation
        for source in evaluation.sources if evaluation else ():
            dataset, _, only_part = source.source.partition(".")
            losses = self.losses[dataset]
            combined = Totals()
            for (d, part), data in self.parts.items():
                if d != dataset or (only_part and part != only_part) or data.validation is None:
                    continue
                interface = self.spec.config.model.interfaces[data.interface]
                part_totals = evaluate_split(
                    self.network,
                    data.interface,
                    data.validation,
                    view_shape(self.spec, data.interface),
                    interface.input_columns,
                    losses,
                    self.training.inference_batch_size,
                    self.device,
                )
                combined.add(part_totals)
                self._write_validation(phase, dataset, part, epoch, summarize(part_totals, losses))
            result = summarize(combined, losses)
            results[source.source] = result
            self._write_validation(phase, dataset, only_part, epoch, result, aggregate_only=True)
            per_target = ", ".join(
                f"{t} {result.losses[t]:.4f} (baseline {result.baseline[t]:.4f})" for t in result.losses
            )
            logger.info(
                "epoch %d validation loss %.4f (persistence baseline %.4f) on %s: %s",
                epoch,
                result.loss,
                result.baseline_loss,
                source.source,
                per_target,
            )
        return results

    def _write_validation(
        self, phase: str, dataset: str, part: str, epoch: int, result: Evaluation, aggregate_only: bool = False
    ) -> None:
        metrics = self.metrics[dataset][1]
        common = self._common(phase, dataset, part, epoch)
        rows = (
            [("aggregate", result.loss, result.baseline_loss)]
            if aggregate_only
            else [(t, result.losses[t], result.baseline[t]) for t in result.losses]
        )
        for target, loss, baseline in rows:
            metrics.write(**common, target=target, metric="loss", value=loss, samples_per_second="")
            metrics.write(**common, target=target, metric="baseline_loss", value=baseline, samples_per_second="")

    def _checkpoint(self, phase_index: int, phase_epoch: int, epoch: int) -> None:
        """Everything that continues the run: weights, optimization lifecycle, counters, monitor, RNG."""
        optimization = self.optimization
        state = {
            "phase_index": phase_index,
            "phase_epoch": phase_epoch,
            "global_step": self.global_step,
            "model_state_dict": self.network.state_dict(),
            "optimizer_state_dict": optimization.optimizer.state_dict(),
            "scheduler_state_dict": optimization.scheduler.state_dict() if optimization.scheduler is not None else None,
            "monitor": {"best_value": self.monitor.best_value, "best_epoch": self.monitor.best_epoch},
            "torch_rng_state": torch.get_rng_state(),
        }
        path = save_checkpoint(self.spec.project_root / "checkpoints" / self.spec.model_name, epoch, state)
        logger.info("checkpoint %s", path)

    def _finish(self, best_state, last_epoch: int, evaluation: dict[str, Evaluation] | None) -> TrainResult:
        exported = []
        best_network = None
        if best_state is not None:
            best_network = build_network(self.spec.network)
            best_network.load_state_dict(best_state)
            best_network.to(self.device)
        for view in self.views.values():
            exported += export_models(self.network, view, "last", last_epoch)
            if best_network is not None:
                exported += export_models(best_network, view, "best", self.monitor.best_epoch)
        for path in exported:
            logger.info("exported %s", path)
        monitored = evaluation.get(self.monitor.source) if evaluation and self.monitor.source else None
        return TrainResult(
            model_name=self.spec.model_name,
            best_epoch=self.monitor.best_epoch,
            monitored_loss=self.monitor.best_value,
            final_validation=dict(monitored.losses) if monitored else {},
            final_baseline=dict(monitored.baseline) if monitored else {},
            exported=[str(p) for p in exported],
        )


def train(spec: RunSpec) -> TrainResult:
    """Train one run spec end to end in this process."""
    return Trainer(spec).run()
