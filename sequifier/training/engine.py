"""The training loop: epochs of shuffled views, optimizer steps, validation, best/last tracking and export."""

from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import dataclass

import torch

from sequifier.config.resolve import RunSpec
from sequifier.data.stored import load_split
from sequifier.data.views import ViewShape, WindowTensors, gather_batch, to_tensors, training_views
from sequifier.export.artifacts import export_models
from sequifier.model.network import SequifierNetwork, build_network
from sequifier.training.evaluation import Evaluation, evaluate
from sequifier.training.losses import TargetLosses
from sequifier.training.metrics import MetricsFile, attach_log_file
from sequifier.training.optimization import build_optimizer, build_scheduler

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
    """Owns the network, data, optimizer and metric files of one run."""

    def __init__(self, spec: RunSpec):
        self.spec = spec
        config = spec.config
        training = config.global_training
        self.device = torch.device(config.device)
        torch.manual_seed(config.seed)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.network: SequifierNetwork = build_network(spec).to(self.device)
        interface = spec.interface
        self.input_columns = interface.input_columns
        self.target_columns = interface.target_columns
        self.shape = ViewShape(training.context_length, training.target_offset, interface.decoder.prediction_length, training.window_stride)
        dataset = config.dataset_training[spec.dataset_name]
        decoder = self.network.interfaces[spec.interface_name].decoder
        targets = [spec.interface_columns[c] for c in self.target_columns]
        class_ids = {t.name: decoder.class_ids(t.name).cpu() for t in targets if t.kind == "categorical"}
        self.losses = TargetLosses(targets, dict(dataset.criterion), dict(dataset.loss_weights or {}), class_ids)
        self.optimizer = build_optimizer(self.network.parameters(), training.learning_rate, training.optimizer)
        self.train_windows = self._load(spec.train_path)
        self.train_views = training_views(self.train_windows, self.shape)
        self.validation_windows = self._load(spec.validation_path) if spec.validation_path else None
        self.validation_views = training_views(self.validation_windows, self.shape) if self.validation_windows else None
        self.global_step = 0
        epochs = config.training_plan.phases[0].epochs
        steps_per_epoch = math.ceil(math.ceil(len(self.train_views[0]) / training.batch_size) / training.accumulation_steps)
        self.step_scheduler_on_batch = training.scheduler_step_on == "batch"
        total = epochs * steps_per_epoch if self.step_scheduler_on_batch else epochs
        self.scheduler = build_scheduler(self.optimizer, training.scheduler, total)

    def _load(self, path) -> WindowTensors:
        columns = sorted(set(self.input_columns) | set(self.target_columns))
        categorical = {name for name, c in self.spec.interface_columns.items() if c.kind == "categorical"}
        return to_tensors(load_split(path, columns, categorical), categorical)

    def run(self) -> TrainResult:
        spec = self.spec
        handler = attach_log_file(spec.logs_dir, spec.model_name)
        training_metrics = MetricsFile(spec.logs_dir / "training-metrics.csv", spec.run_dir.name)
        validation_metrics = MetricsFile(spec.logs_dir / "validation-metrics.csv", spec.run_dir.name)
        try:
            return self._run(training_metrics, validation_metrics)
        finally:
            training_metrics.close()
            validation_metrics.close()
            logging.getLogger("sequifier").removeHandler(handler)
            handler.close()

    def _run(self, training_metrics: MetricsFile, validation_metrics: MetricsFile) -> TrainResult:
        spec = self.spec
        phase = spec.config.training_plan.phases[0]
        n_params = sum(p.numel() for p in self.network.parameters())
        logger.info("training %s: %d parameters, %d training views, %s validation views, phase %r for %d epochs",
                    spec.model_name, n_params, len(self.train_views[0]),
                    len(self.validation_views[0]) if self.validation_views else "no", phase.name, phase.epochs)
        best_loss, best_epoch, best_state = math.inf, 0, None
        evaluation: Evaluation | None = None
        for epoch in range(1, phase.epochs + 1):
            lr = self.optimizer.param_groups[0]["lr"]
            train_loss, samples_per_second = self._train_epoch(epoch, phase.epochs)
            if self.scheduler is not None and not self.step_scheduler_on_batch:
                self.scheduler.step()
            common = dict(phase=phase.name, dataset=spec.dataset_name, part=spec.part_name, epoch=epoch, global_step=self.global_step, learning_rate=lr)
            training_metrics.write(**common, target="aggregate", metric="loss", value=train_loss, samples_per_second=samples_per_second)
            monitored = train_loss
            if self.validation_views is not None:
                evaluation = evaluate(self.network, spec.interface_name, self.validation_windows, self.validation_views, self.shape,
                                      self.input_columns, self.losses, spec.config.global_training.inference_batch_size, self.device)
                for target in self.target_columns:
                    validation_metrics.write(**common, target=target, metric="loss", value=evaluation.losses[target], samples_per_second="")
                    validation_metrics.write(**common, target=target, metric="baseline_loss", value=evaluation.baseline[target], samples_per_second="")
                validation_metrics.write(**common, target="aggregate", metric="loss", value=evaluation.loss, samples_per_second="")
                validation_metrics.write(**common, target="aggregate", metric="baseline_loss", value=evaluation.baseline_loss, samples_per_second="")
                per_target = ", ".join(f"{t} {evaluation.losses[t]:.4f} (baseline {evaluation.baseline[t]:.4f})" for t in self.target_columns)
                logger.info("epoch %d validation loss %.4f (persistence baseline %.4f): %s", epoch, evaluation.loss, evaluation.baseline_loss, per_target)
                monitored = evaluation.loss
            if monitored < best_loss:
                best_loss, best_epoch, best_state = monitored, epoch, copy.deepcopy(self.network.state_dict())
        exported = self._export(best_state, best_epoch, phase.epochs)
        return TrainResult(
            model_name=spec.model_name,
            best_epoch=best_epoch,
            monitored_loss=best_loss,
            final_validation=dict(evaluation.losses) if evaluation else {},
            final_baseline=dict(evaluation.baseline) if evaluation else {},
            exported=exported,
        )

    def _train_epoch(self, epoch: int, epochs: int) -> tuple[float, float]:
        training = self.spec.config.global_training
        window_index, end_slot = self.train_views
        order = torch.randperm(len(window_index), generator=self.generator)
        batch_size = training.batch_size
        n_batches = math.ceil(len(order) / batch_size)
        self.network.train()
        started = last_report = time.perf_counter()
        loss_sum, loss_batches, pending = 0.0, 0, 0
        for batch_number, start in enumerate(range(0, len(order), batch_size), 1):
            chosen = order[start : start + batch_size]
            batch = gather_batch(self.train_windows, window_index[chosen], end_slot[chosen], self.shape, self.input_columns, self.target_columns)
            loss = self._loss(batch)
            loss.backward()
            pending += 1
            loss_sum += float(loss.detach())
            loss_batches += 1
            if pending == training.accumulation_steps or batch_number == n_batches:
                self._step(pending)
                pending = 0
            now = time.perf_counter()
            if now - last_report > PROGRESS_SECONDS:
                last_report = now
                rate = batch_number / (now - started)
                logger.info("epoch %d/%d batch %d/%d loss %.4f, %.0f samples/s, epoch ETA %.0fs", epoch, epochs, batch_number, n_batches,
                            loss_sum / loss_batches, rate * batch_size, (n_batches - batch_number) / rate)
        elapsed = time.perf_counter() - started
        mean_loss = loss_sum / max(loss_batches, 1)
        samples_per_second = len(order) / elapsed if elapsed > 0 else 0.0
        logger.info("epoch %d/%d training loss %.4f, %.0f samples/s", epoch, epochs, mean_loss, samples_per_second)
        return mean_loss, samples_per_second

    def _loss(self, batch) -> torch.Tensor:
        inputs = {k: v.to(self.device, non_blocking=True) for k, v in batch.inputs.items()}
        targets = {k: v.to(self.device, non_blocking=True) for k, v in batch.targets.items()}
        valid = batch.target_valid.to(self.device)
        pad = batch.left_pad_lengths.to(self.device) if batch.left_pad_lengths is not None else None
        outputs = self.network(self.spec.interface_name, inputs, pad)
        sums = self.losses.sums(outputs, targets, valid)
        means = {name: total / count.clamp(min=1) for name, (total, count) in sums.items()}
        return self.losses.aggregate(means)

    def _step(self, microbatches: int) -> None:
        if microbatches > 1:
            for parameter in self.network.parameters():
                if parameter.grad is not None:
                    parameter.grad.div_(microbatches)
        clip = self.spec.config.global_training.gradient_clip
        if clip:
            torch.nn.utils.clip_grad_norm_(self.network.parameters(), clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.global_step += 1
        if self.scheduler is not None and self.step_scheduler_on_batch:
            self.scheduler.step()

    def _export(self, best_state, best_epoch: int, last_epoch: int) -> list[str]:
        spec = self.spec
        paths = export_models(self.network, spec, "last", last_epoch)
        if best_state is not None:
            best_network = build_network(spec)
            best_network.load_state_dict(best_state)
            paths += export_models(best_network.to(self.device), spec, "best", best_epoch)
        for path in paths:
            logger.info("exported %s", path)
        return [str(p) for p in paths]


def train(spec: RunSpec) -> TrainResult:
    """Train one run spec end to end in this process."""
    return Trainer(spec).run()
