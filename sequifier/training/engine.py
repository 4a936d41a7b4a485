"""The training loop: phases of planned batches, accumulation, validation, checkpoints, best/last models, export.

A run can stop anywhere (kill -9, SIGTERM) and continue exactly: a checkpoint records the weights,
the optimization lifecycle, the RunProgress (down to the next planned batch), the monitor and best
model, the random streams and the lengths of the metric files (see checkpoint.py, resume.py).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import torch

from sequifier.config.resolve import RunSpec
from sequifier.data.datasets import PartData, load_parts, shuffled_batches, view_shape
from sequifier.data.prefetch import prefetched
from sequifier.data.views import Batch
from sequifier.distributed.agreement import agreed_snapshot, agreed_stop, rank_means
from sequifier.distributed.parallel import is_sharded, rank_device, reshard, training_module
from sequifier.distributed.ranks import SINGLE, Ranks
from sequifier.distributed.state import load_model_state, model_state, optimizer_loader, optimizer_state
from sequifier.distributed.totals import summed_totals
from sequifier.export.artifacts import export_models
from sequifier.model.network import SequifierNetwork, build_network
from sequifier.training.checkpoint import checkpoint_dir, checkpoint_path, read_checkpoint, write_checkpoint
from sequifier.training.class_shares import class_share_rows
from sequifier.training.curves import draw_run_curves
from sequifier.training.divergence import check_loss, check_weights
from sequifier.training.evaluation import Evaluation, Totals, evaluate_split, summarize
from sequifier.training.freezing import frozen_parameters
from sequifier.training.live import EpochProgress, Throughput
from sequifier.training.losses import TargetLosses
from sequifier.training.monitor import Monitor
from sequifier.training.optimization import OptimizationLifecycle
from sequifier.training.plan import PlannedBatch, phase_epoch, stream_seed
from sequifier.training.priors import fit_priors
from sequifier.training.progress import RunProgress
from sequifier.training.reporting import RunRecords
from sequifier.training.resume import check_fingerprint, checkpoint_to_resume, fingerprint
from sequifier.training.rng import capture_rng, restore_rng
from sequifier.training.runtime import TrainingRuntime, export_network
from sequifier.training.snapshots import PERSISTENT, SnapshotSchedule
from sequifier.training.stop import GracefulStop, StopRequested
from sequifier.training.threads import torch_threads

logger = logging.getLogger("sequifier")


@dataclass(frozen=True)
class TrainResult:
    model_name: str
    best_epoch: int
    monitored_loss: float
    final_validation: dict[str, float]
    final_baseline: dict[str, float]
    exported: list[str]
    samples_per_second: float = math.nan
    log_folders: tuple[str, ...] = ()


class Trainer:
    """Owns the network, data, optimization lifecycle, progress and records of one run."""

    def __init__(self, spec: RunSpec, clock: Callable[[], float] = time.monotonic, ranks: Ranks = SINGLE):
        self.spec = spec
        self.ranks = ranks
        config = spec.config
        self.training = config.global_training
        self.device = rank_device(config.device, ranks)
        torch.manual_seed(config.seed)
        self.network: SequifierNetwork = build_network(spec.network).to(self.device)
        self.runtime = TrainingRuntime(self.network, self.training, self.device)
        self.parts = load_parts(spec, ranks)
        fit_priors(self.network, self.parts, ranks)
        model = training_module(self.network, self.training, ranks, self.device)
        self.sharded = is_sharded(self.training, ranks)
        if ranks.joined:
            self.runtime.run_through(model)
            torch.manual_seed(stream_seed(config.seed, "dropout", ranks.rank))
        self.losses = {name: self._target_losses(name) for name in config.dataset_training}
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
        self.progress = RunProgress()
        self.pending: list[str] = []  # datasets of the microbatches in the open accumulation window
        self.best_state: dict[str, torch.Tensor] | None = None
        self.last_evaluation: dict[str, Evaluation] | None = None
        self.last_finite_loss: float | None = None
        self.snapshots = SnapshotSchedule(self.training, clock)
        self.checkpoints = checkpoint_dir(spec.project_root, spec.model_name)
        self.fingerprint = fingerprint(spec)
        self.run_id = spec.run_dir.name

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
        if self.ranks.joined:
            seed = stream_seed(seed, "rank", self.ranks.rank)
        return shuffled_batches(part.train, self.training.batch_size, seed)

    def _gathered(self, schedule: list[PlannedBatch]) -> Iterator[Batch]:
        """The running epoch's batches from the next planned one on, gathered in order (ahead, with num_workers)."""
        p = self.progress
        views = {key: self._batches(part, p.phase_index, p.phase_epoch) for key, part in self.parts.items()}
        gather = lambda b: self.parts[(b.dataset, b.part)].training_batch(views[(b.dataset, b.part)][b.batch])
        return prefetched(schedule[p.batches_done :], gather, self.training.num_workers)

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
        resume_from = checkpoint_to_resume(self.spec)
        saved = self._restore(resume_from) if resume_from else None
        kept = saved["metric_bytes"] if saved else None
        self.records = RunRecords(self.spec, self.run_id, kept, enabled=self.ranks.is_main)
        try:
            if resume_from:
                p = self.progress
                logger.info(
                    "resuming %s from %s: epoch %d of phase %d, after %d planned batches (step %d)",
                    self.spec.model_name, resume_from, p.phase_epoch, p.phase_index + 1, p.batches_done, p.global_step,
                )  # fmt: skip
            with GracefulStop() as self.stop, torch_threads(self.training.num_threads):
                return self._run()
        finally:
            self.records.close()

    def _restore(self, path: Path) -> dict:
        """Load everything the rest of the run depends on from the checkpoint at `path`."""
        state = read_checkpoint(path)
        check_fingerprint(state["fingerprint"], self.fingerprint, path)
        load_model_state(self.network, state["model_state_dict"], self.sharded)
        self.optimization.load_state_dict(state["optimization"], optimizer_loader(self.network, self.sharded))
        own = state["ranks"][self.ranks.rank]
        self.progress = RunProgress.from_plain(own["progress"])
        self.monitor.best_value, self.monitor.best_epoch = (
            state["monitor"]["best_value"],
            state["monitor"]["best_epoch"],
        )
        self.best_state = state["best_model_state_dict"]
        evaluations = state["last_evaluation"]
        self.last_evaluation = {k: Evaluation(**v) for k, v in evaluations.items()} if evaluations is not None else None
        self.last_finite_loss = state["last_finite_loss"]
        self.run_id = state["run_id"]
        restore_rng(own["rng"])
        return state

    def _run(self) -> TrainResult:
        phases = self.spec.config.training_plan.phases
        p = self.progress
        n_params = sum(parameter.numel() for parameter in self.network.parameters())
        views = ", ".join(f"{d}.{part}: {len(data.train)}" for (d, part), data in self.parts.items())
        per_rank = f" per process, {self.ranks.world_size} processes" if self.ranks.joined else ""
        logger.info("training %s: %d parameters; training views %s%s", self.spec.model_name, n_params, views, per_rank)
        self.throughput = Throughput()
        while p.phase_index < len(phases):
            if p.completed_epochs and self.monitor.should_stop(p.completed_epochs):
                logger.info(
                    "early stopping after epoch %d: no improvement of %s for %d epochs",
                    p.completed_epochs, self.monitor.description, self.training.early_stopping_patience,
                )  # fmt: skip
                break
            phase = phases[p.phase_index]
            if not p.phase_started:
                self.optimization.begin_phase(p.phase_index)
                p.phase_started = True
            training_loss = self._train_epoch()
            epoch = p.global_epoch
            self.last_evaluation = self._validate(phase.name, epoch)
            if self.monitor.update(epoch, self.last_evaluation, training_loss):
                self.best_state = copy.deepcopy(model_state(self.network, self.sharded))
            draw_run_curves(self.records.folders())
            p.finish_epoch(phase.epochs)
            if self.snapshots.after_epoch(epoch):
                self._checkpoint(f"epoch-{epoch}.pt")
            self._stop_if_requested()
        result = self._finish()
        return dataclasses.replace(
            result, samples_per_second=self.throughput.samples_per_second, log_folders=self.records.folders()
        )

    def _train_epoch(self) -> float:
        """Train the rest of the running epoch (all of it unless resumed inside it); returns its training loss."""
        p = self.progress
        phase = self.spec.config.training_plan.phases[p.phase_index]
        schedule = self.schedules[p.phase_index][p.phase_epoch - 1]
        batches = self._gathered(schedule)
        p.begin_epoch(list(self.parts), self.optimization.learning_rate)
        self.network.train()
        label = f"epoch {p.global_epoch} ({phase.name})"
        display = EpochProgress(label, len(schedule), p, self.losses, self.ranks.world_size, self.ranks.is_main)
        for number in range(p.batches_done, len(schedule)):
            planned = schedule[number]
            key = (planned.dataset, planned.part)
            if self.pending and self.pending[-1] != planned.dataset:
                self._flush()
            p.epoch_samples += self._microbatch(self.parts[key], next(batches), p.epoch_totals[key])
            self.pending.append(planned.dataset)
            if len(self.pending) == self.training.accumulation_steps:
                self._flush()
            p.batches_done, p.global_batch = number + 1, p.global_batch + 1
            self._after_batch(phase.name)
            display.after_batch()
        self._flush()
        self.optimization.end_epoch()
        logger.info("epoch %d: %.0f samples/s", p.global_epoch, display.close(self.throughput))
        totals = {key: summed_totals(part_totals, self.ranks) for key, part_totals in p.epoch_totals.items()}
        return self.records.training_epoch(self._common(phase.name), self.losses, totals)

    def _after_batch(self, phase: str) -> None:
        """Snapshots that are due (each after flushing the open window), and a requested stop."""
        kind = agreed_snapshot(self.snapshots.after_batch(self.progress.global_batch), self.ranks)
        if kind is not None:
            self._flush()
            if kind == PERSISTENT and self.training.save_interval_val_loss and self.spec.config.evaluation:
                self._validate(phase, self.progress.global_epoch)
            self._checkpoint(f"batch-{self.progress.global_batch}.pt" if kind == PERSISTENT else None)
        if not self.pending:
            self._stop_if_requested()

    def _stop_if_requested(self) -> None:
        """After a requested stop, at the first optimizer-step boundary: write latest and stop."""
        if agreed_stop(self.stop, self.ranks):
            path = self._checkpoint(None)
            p = self.progress
            logger.info(
                "stopped on %s at epoch %d, after %d planned batches (step %d); resume from %s",
                self.stop.requested, p.global_epoch, p.batches_done, p.global_step, path,
            )  # fmt: skip
            raise StopRequested(str(path))

    def _microbatch(self, part: PartData, batch: Batch, totals: Totals) -> int:
        loss, sums, inputs = self._batch_loss(part, batch)
        p = self.progress
        where = f"epoch {p.global_epoch}, batch {p.batches_done + 1}, step {p.global_step}"
        check_loss(sums, inputs, where, self.last_finite_loss, self.optimization.learning_rate)
        self.last_finite_loss = float(loss.detach())
        if loss.requires_grad:
            self.optimization.scaled(loss).backward()
            self.runtime.after_backward()
        totals.add(
            Totals(
                loss={n: float(t.detach()) for n, (t, _) in sums.items()},
                count={n: int(c) for n, (_, c) in sums.items()},
            )
        )
        return len(batch.target_valid)

    def batch_loss(self, part: PartData, chosen: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """The optimized loss of training views `chosen` (weighted per-target means of counted targets) and its sums."""
        loss, sums, _ = self._batch_loss(part, part.training_batch(chosen))
        return loss, sums

    def _batch_loss(self, part: PartData, batch: Batch) -> tuple[torch.Tensor, dict, dict]:
        losses = self.losses[part.spec.dataset]
        inputs = {k: v.to(self.device) for k, v in batch.inputs.items()}
        targets = {k: v.to(self.device) for k, v in batch.targets.items()}
        pad = batch.left_pad_lengths.to(self.device) if batch.left_pad_lengths is not None else None
        with self.runtime.autocast():
            outputs = self.runtime.forward(part.interface, inputs, pad)
            sums = losses.sums(outputs, targets, batch.target_valid.to(self.device))
        return losses.aggregate(rank_means(sums, self.ranks)), sums, inputs

    def _flush(self) -> None:
        """Close the accumulation window.

        Drop the dataset's frozen gradients (before unscaling and overflow detection), average over the
        actual microbatch count, step.
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
        self.optimization.step()
        self.progress.global_step += 1

    def _common(self, phase: str) -> dict:
        p = self.progress
        return dict(phase=phase, epoch=p.global_epoch, global_step=p.global_step, learning_rate=p.epoch_learning_rate)

    def _validate(self, phase: str, epoch: int) -> dict[str, Evaluation]:
        """Evaluation of every evaluation source: its parts' totals combined."""
        results = {}
        evaluation = self.spec.config.evaluation
        common = self._common(phase) | {"epoch": epoch}
        for source in evaluation.sources if evaluation else ():
            dataset, _, only_part = source.source.partition(".")
            losses = self.losses[dataset]
            combined = Totals()
            for (d, part), data in self.parts.items():
                if d != dataset or (only_part and part != only_part) or data.validation is None:
                    continue
                interface = self.spec.config.model.interfaces[data.interface]
                part_totals = summed_totals(
                    evaluate_split(
                        self.network,
                        data.interface,
                        data.validation,
                        view_shape(self.spec, data.interface),
                        interface.input_columns,
                        losses,
                        self.training.inference_batch_size,
                        self.device,
                        self.runtime.autocast(),
                    ),
                    self.ranks,
                )
                combined.add(part_totals)
                self.records.validation(common, dataset, part, summarize(part_totals, losses), aggregate_only=False)
            result = summarize(combined, losses)
            results[source.source] = result
            rows = class_share_rows(self.network, self.spec, self.parts, source.source, self.device, self.ranks)
            if self.sharded:
                reshard(self.network)  # the validation forwards leave whole weights gathered
            self.records.class_shares(common, dataset, only_part, rows)
            self.records.validation(common, dataset, only_part, result, aggregate_only=True)
            per_target = ", ".join(
                f"{t} {result.losses[t]:.4f} (baseline {result.baseline[t]:.4f})" for t in result.losses
            )
            logger.info(
                "epoch %d validation loss %.4f (persistence baseline %.4f) on %s: %s",
                epoch, result.loss, result.baseline_loss, source.source, per_target,
            )  # fmt: skip
        return results

    def _checkpoint(self, name: str | None) -> Path:
        """Write snapshot `name` (None: only latest) with everything the rest of the run depends on."""
        check_weights(self.network, f"checkpoint {name or 'latest'}")
        own = {"rng": capture_rng(), "progress": self.progress.to_plain()}  # epoch sums and random streams differ
        per_rank = self.ranks.gather(own)
        weights, optimization = self._whole_state()
        path = checkpoint_path(self.checkpoints, name)
        if not self.ranks.is_main:
            return path
        evaluations = self.last_evaluation
        state = {
            "fingerprint": self.fingerprint,
            "run_id": self.run_id,
            "progress": self.progress.to_plain(),
            "model_state_dict": weights,
            "best_model_state_dict": self.best_state,
            "optimization": optimization,
            "monitor": {"best_value": self.monitor.best_value, "best_epoch": self.monitor.best_epoch},
            "last_evaluation": {k: dataclasses.asdict(v) for k, v in evaluations.items()} if evaluations else None,
            "last_finite_loss": self.last_finite_loss,
            "ranks": per_rank,
            "metric_bytes": self.records.sizes(),
        }
        path = write_checkpoint(self.checkpoints, name, state)
        logger.info("checkpoint %s", path)
        return path

    def _finish(self) -> TrainResult:
        last_epoch = self.progress.completed_epochs
        check_weights(self.network, f"the end of epoch {last_epoch}")
        last_state = model_state(self.network, self.sharded)
        exported = self._export(last_epoch, last_state) if self.ranks.is_main else []
        evaluation = self.last_evaluation
        monitored = evaluation.get(self.monitor.source) if evaluation and self.monitor.source else None
        return TrainResult(
            model_name=self.spec.model_name,
            best_epoch=self.monitor.best_epoch,
            monitored_loss=self.monitor.best_value,
            final_validation=dict(monitored.losses) if monitored else {},
            final_baseline=dict(monitored.baseline) if monitored else {},
            exported=[str(p) for p in exported],
        )

    def _whole_state(self) -> tuple[dict, dict]:
        """The network's and the optimization's state dicts, whole (gathered on rank 0 under FSDP)."""
        optimization = self.optimization.state_dict()
        if self.sharded and optimization["phase"] is not None:
            optimization["optimizer"] = optimizer_state(self.network, self.optimization.optimizer, self.sharded)
        return model_state(self.network, self.sharded), optimization

    def _export(self, last_epoch: int, last_state: dict[str, torch.Tensor]) -> list[Path]:
        """The last model and, when there is one, the best, each from an eager float32 copy; rank 0 only."""
        last = export_network(self.spec.network, last_state, self.device)
        exported = export_models(last, self.spec, "last", last_epoch)
        if self.best_state is not None:
            best = export_network(self.spec.network, self.best_state, self.device)
            exported += export_models(best, self.spec, "best", self.monitor.best_epoch)
        for path in exported:
            logger.info("exported %s", path)
        return exported


def train(spec: RunSpec, ranks: Ranks = SINGLE) -> TrainResult:
    """Train one run spec end to end in this process (as rank `ranks.rank` of a distributed run)."""
    return Trainer(spec, ranks=ranks).run()
