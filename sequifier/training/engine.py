"""The training loop: phases of planned batches, accumulation, validation, checkpoints, best/last models, export.

Every rank of a distributed run runs this loop on its share of the data (data/datasets.py) in step
with the others (distributed/agreement.py). A run can stop anywhere (kill -9, SIGTERM) and continue
exactly from what run_state.py writes: the weights, the optimization lifecycle, the RunProgress (down
to the next planned batch), the monitor and best model, random streams and metric file lengths.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import time
from typing import Callable, Iterator

import torch

from sequifier.config.resolve import RunSpec
from sequifier.data.datasets import PartData, load_parts, shuffled_batches, splits_held_whole
from sequifier.data.prefetch import gathering_workers, prefetched
from sequifier.data.views import Batch
from sequifier.distributed.agreement import (
    agreed_snapshot,
    agreed_stop,
    check_ranks_read_alike,
    rank_counts,
    rank_means,
)
from sequifier.distributed.parallel import is_sharded, rank_device, training_module
from sequifier.distributed.ranks import SINGLE, Ranks
from sequifier.distributed.state import model_state
from sequifier.distributed.totals import summed_totals
from sequifier.export.artifacts import export_run
from sequifier.model.fits import check_network_fits
from sequifier.model.network import SequifierNetwork, build_network
from sequifier.training.checkpoint import checkpoint_dir
from sequifier.training.claim import claimed_outputs
from sequifier.training.curves import draw_run_curves
from sequifier.training.divergence import check_loss, check_weights
from sequifier.training.evaluation import Evaluation, Totals
from sequifier.training.freezing import frozen_parameters, refuse_datasets_that_train_nothing
from sequifier.training.heap import keep_freed_memory
from sequifier.training.left_out_targets import note_targets_left_out
from sequifier.training.live import EpochProgress, Throughput
from sequifier.training.losses import dataset_losses
from sequifier.training.monitor import Monitor
from sequifier.training.optimization import OptimizationLifecycle
from sequifier.training.passes import batch_passes, largest_pass_tokens, rows_per_pass
from sequifier.training.plan import PlannedBatch, phase_epoch, phase_optimizer_steps, stream_seed, window_ends
from sequifier.training.priors import fit_priors
from sequifier.training.profile import BACKWARD, FORWARD, OPTIMIZER, PROFILE, timed
from sequifier.training.profile_report import report_profile
from sequifier.training.progress import RunProgress
from sequifier.training.reporting import MetricLengths, RunRecords
from sequifier.training.result import TrainResult
from sequifier.training.resume import checkpoint_to_resume, fingerprint, set_aside_checkpoints_of_another_config
from sequifier.training.run_log import hold_start_up_records
from sequifier.training.run_state import new_run_id, restore, save_snapshot
from sequifier.training.runtime import TrainingRuntime
from sequifier.training.snapshots import PERSISTENT, SnapshotSchedule
from sequifier.training.stop import GracefulStop, StopRequested
from sequifier.training.threads import torch_threads
from sequifier.training.validation import Validator

logger = logging.getLogger("sequifier")


class Trainer:
    """Owns the network, data, optimization lifecycle, progress and records of one run."""

    def __init__(self, spec: RunSpec, clock: Callable[[], float] = time.monotonic, ranks: Ranks = SINGLE):
        self.spec = spec
        self.ranks = ranks
        if ranks.is_main:
            hold_start_up_records()
        config = spec.config
        self.training = config.global_training
        self.device = rank_device(config.device, ranks)
        torch.manual_seed(config.seed)
        self.network: SequifierNetwork = timed("model build")(build_network)(spec.network).to(self.device)
        self.runtime = timed("model build")(TrainingRuntime)(self.network, self.training, self.device)
        self.float16 = any(parameter.dtype == torch.float16 for parameter in self.network.parameters())
        self.frozen = frozen_parameters(self.network, config)
        refuse_datasets_that_train_nothing(self.network, config, self.frozen)
        with splits_held_whole(spec, logger.info):
            self.parts = timed("data loading")(load_parts)(spec, ranks)
            self.fingerprint = fingerprint(spec)
        check_ranks_read_alike(self.fingerprint["splits"], ranks)
        timed("data loading")(fit_priors)(self.network, self.parts, ranks)
        note_targets_left_out(self.network, self.parts, ranks)
        model = training_module(self.network, self.training, ranks, self.device)
        self.sharded = is_sharded(self.training, ranks)
        if ranks.joined:
            self.runtime.run_through(model)
            torch.manual_seed(stream_seed(config.seed, "dropout", ranks.rank))
        self.losses = {name: dataset_losses(spec, self.network, name) for name in config.dataset_training}
        phase_epochs = [phase.epochs for phase in config.training_plan.phases]
        phase_steps = [self._phase_steps(p) for p in range(len(phase_epochs))]
        self.optimization = OptimizationLifecycle(
            list(self.network.parameters()), self.training, phase_epochs, phase_steps
        )
        self.monitor = Monitor(config)
        self.progress = RunProgress()
        self.pending: list[str] = []  # datasets of the microbatches in the open accumulation window
        self.best_state: dict[str, torch.Tensor] | None = None
        self.last_evaluation: dict[str, Evaluation] | None = None
        self.last_finite_loss: float | None = None
        self.snapshots = SnapshotSchedule(self.training, clock)
        self.checkpoints = checkpoint_dir(spec.project_root, spec.model_name)
        self.run_id = new_run_id(spec.run_dir)
        self.validator = Validator(
            spec, self.parts, self.losses, self.network, self.runtime, ranks, self.sharded, self.device
        )
        self.validator.check_scoreable()

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
        workers = gathering_workers(self.training.num_workers, self.device.type)
        return prefetched(schedule[p.batches_done :], gather, workers)

    def _phase_steps(self, phase_index: int) -> int:
        phase = self.spec.config.training_plan.phases[phase_index]
        seed = lambda epoch: self._selection_seed(phase_index, epoch)
        counts = self._batch_counts()
        return phase_optimizer_steps(self.spec.config, phase, counts, self.training.accumulation_steps, seed)

    def _selection_seed(self, phase_index: int, epoch: int) -> int:
        return stream_seed(self.spec.config.seed, "select", phase_index, epoch)

    def _batch_counts(self) -> dict[tuple[str, str], int]:
        return {key: math.ceil(len(part.train) / self.training.batch_size) for key, part in self.parts.items()}

    def _schedule(self, phase_index: int, epoch: int) -> list[PlannedBatch]:
        phase = self.spec.config.training_plan.phases[phase_index]
        return phase_epoch(self.spec.config, phase, self._batch_counts(), self._selection_seed(phase_index, epoch))

    def run(self) -> TrainResult:
        resume_from = checkpoint_to_resume(self.spec, announce=self.ranks.is_main)
        saved = restore(self, resume_from) if resume_from else None
        if self.ranks.is_main and (resume_from is None or resume_from.parent.resolve() != self.checkpoints.resolve()):
            set_aside_checkpoints_of_another_config(self.spec, self.fingerprint)
        kept = MetricLengths(saved["metric_bytes"], saved.get("model_name", self.spec.model_name)) if saved else None
        self.records = RunRecords(self.spec, self.run_id, kept, enabled=self.ranks.is_main)
        try:
            if resume_from:
                self._announce_resume(resume_from)
            with (
                GracefulStop(announce=self.ranks.is_main) as self.stop,
                torch_threads(self.training.num_threads, self.training.distributed),
            ):
                result = self._run()
        except BaseException:
            self.records.close(after_failure=True)
            raise
        self.records.close()
        return result

    def _announce_resume(self, resume_from) -> None:
        p = self.progress
        if p.phase_index >= len(self.spec.config.training_plan.phases):
            epochs = f"{p.completed_epochs} epoch{'' if p.completed_epochs == 1 else 's'}"
            logger.info(
                "resuming %s from %s: its training plan is complete (%s, step %d); nothing is left to train",
                self.spec.model_name, resume_from, epochs, p.global_step,
            )  # fmt: skip
            return
        logger.info(
            "resuming %s from %s: epoch %d of phase %d, after %d planned batches (step %d)",
            self.spec.model_name, resume_from, p.phase_epoch, p.phase_index + 1, p.batches_done, p.global_step,
        )  # fmt: skip

    def _run(self) -> TrainResult:
        phases = self.spec.config.training_plan.phases
        p = self.progress
        n_params = sum(parameter.numel() for parameter in self.network.parameters())
        views = ", ".join(f"{d}.{part}: {len(data.train)}" for (d, part), data in self.parts.items())
        per_rank = f" per process, {self.ranks.world_size} processes" if self.ranks.joined else ""
        logger.info("training %s: %d parameters; training views %s%s", self.spec.model_name, n_params, views, per_rank)
        logger.info(self.runtime.precision_note)
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
                timed("model build")(self.optimization.begin_phase)(p.phase_index)
                p.phase_started = True
            training_loss = timed("training steps")(self._train_epoch)()
            self.stop.training_done = p.phase_index == len(phases) - 1 and p.phase_epoch == phase.epochs
            epoch = p.global_epoch
            self.last_evaluation = self._validate(phase.name, epoch)
            if self.monitor.update(epoch, self.last_evaluation, training_loss):
                self.best_state = copy.deepcopy(model_state(self.network, self.sharded))
            timed("records")(draw_run_curves)(self.records.folders())
            p.finish_epoch(phase.epochs)
            if self.snapshots.after_epoch(epoch):
                save_snapshot(self, f"epoch-{epoch}.pt")
            if p.phase_index < len(phases):
                self._stop_if_requested()
        self.stop.training_done = True
        if self.stop.requested:
            logger.info("%s came after the last training step: the run exports its models instead of stopping",
                        self.stop.requested)  # fmt: skip
        result = self._finish()
        report_profile(self.records.folders())
        return dataclasses.replace(
            result, samples_per_second=self.throughput.samples_per_second, log_folders=self.records.folders()
        )

    def _train_epoch(self) -> float:
        """Train the rest of the running epoch (all of it unless resumed inside it); returns its training loss."""
        p = self.progress
        phase = self.spec.config.training_plan.phases[p.phase_index]
        schedule = self._schedule(p.phase_index, p.phase_epoch)
        batches = PROFILE.gathered(self._gathered(schedule))
        p.begin_epoch(list(self.parts), self.optimization.learning_rate)
        self.network.train()
        label = f"epoch {p.global_epoch} ({phase.name})"
        display = EpochProgress(label, len(schedule), p, self.losses, self.ranks.world_size, self.ranks.is_main)
        planned_updates = set(window_ends(schedule, self.training.accumulation_steps))
        for number in range(p.batches_done, len(schedule)):
            planned = schedule[number]
            key = (planned.dataset, planned.part)
            p.epoch_samples += self._microbatch(self.parts[key], next(batches), p.epoch_totals[key])
            self.pending.append(planned.dataset)
            if number in planned_updates:
                self._flush(planned=True)
            p.batches_done, p.global_batch = number + 1, p.global_batch + 1
            self._after_batch(phase.name, ends_epoch=number + 1 == len(schedule))
            display.after_batch()
        self.optimization.end_epoch()
        logger.info("epoch %d: %.0f samples/s", p.global_epoch, display.close(self.throughput))
        totals = {key: summed_totals(part_totals, self.ranks) for key, part_totals in p.epoch_totals.items()}
        return timed("records")(self.records.training_epoch)(self._common(phase.name), self.losses, totals)

    def _after_batch(self, phase: str, ends_epoch: bool) -> None:
        """Snapshots that are due (each after flushing the open window), and a requested stop. A snapshot at the
        epoch's last batch leaves validating to the epoch's end, which follows with the same weights."""
        kind = agreed_snapshot(self.snapshots.after_batch(self.progress.global_batch), self.ranks)
        if kind is not None:
            self._flush(planned=False)
            validates = self.training.save_interval_val_loss and self.spec.config.evaluation and not ends_epoch
            if kind == PERSISTENT and validates:
                self._validate(phase, self.progress.global_epoch, snapshot_batch=self.progress.global_batch)
            save_snapshot(self, f"batch-{self.progress.global_batch}.pt" if kind == PERSISTENT else None)
        if not self.pending:
            self._stop_if_requested()

    def _stop_if_requested(self) -> None:
        """After a requested stop, at the first optimizer-step boundary: write latest and stop."""
        if agreed_stop(self.stop, self.ranks):
            path = save_snapshot(self, None)
            p = self.progress
            logger.info(
                "stopped on %s at epoch %d, after %d planned batches (step %d); resume from %s",
                self.stop.requested, p.global_epoch, p.batches_done, p.global_step, path,
            )  # fmt: skip
            raise StopRequested(str(path))

    def _microbatch(self, part: PartData, batch: Batch, totals: Totals) -> int:
        """Forward and backward over `batch`, in passes of its rows (passes.py) whose gradients add up."""
        counts = self._counts(part, batch)
        rows = rows_per_pass(len(batch.target_valid), part.shape.context_length, self.training, self.device)
        p = self.progress
        where = f"epoch {p.global_epoch}, batch {p.batches_done + 1}, step {p.global_step}"
        microbatch_loss = 0.0
        for index, piece in enumerate(batch_passes(batch, rows)):
            first = index == 0  # the profile counts each microbatch's forward and backward once
            loss, sums, inputs = PROFILE.step(
                FORWARD, self.device, self._batch_loss, part, piece, counts, counted=first
            )
            if loss.requires_grad:
                PROFILE.step(BACKWARD, self.device, self.optimization.scaled(loss).backward, counted=first)
                self.runtime.after_backward()
            # after backward is queued, so that a GPU runs it while the host waits here for the loss's value
            check_loss(
                sums, inputs, where, self.last_finite_loss, self.optimization.learning_rate, self.float16,
                before_any_update=p.global_step == 0,
            )  # fmt: skip
            microbatch_loss += float(loss.detach())
            loss_sums = {n: float(t.detach()) for n, (t, _) in sums.items()}
            totals.add(Totals(loss=loss_sums, count={n: int(c) for n, (_, c) in sums.items()}))
        self.last_finite_loss = microbatch_loss
        return len(batch.target_valid)

    def batch_loss(self, part: PartData, chosen: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """The optimized loss of training views `chosen` (weighted per-target means of counted targets) and its sums."""
        batch = part.training_batch(chosen)
        loss, sums, _ = self._batch_loss(part, batch, self._counts(part, batch))
        return loss, sums

    def _counts(self, part: PartData, batch: Batch) -> dict[str, torch.Tensor]:
        """Per target, the counted targets of `batch` on all ranks: what its loss (or its passes' losses) divides by."""
        return rank_counts(self.losses[part.spec.dataset].counts(batch.targets, batch.target_valid), self.ranks)

    def _batch_loss(
        self, part: PartData, batch: Batch, counts: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict, dict]:
        """The loss of `batch` as a share of the loss over `counts` counted targets, its sums, and its inputs."""
        losses = self.losses[part.spec.dataset]
        inputs = {k: v.to(self.device) for k, v in batch.inputs.items()}
        targets = {k: v.to(self.device) for k, v in batch.targets.items()}
        pad = batch.left_pad_lengths.to(self.device) if batch.left_pad_lengths is not None else None
        with self.runtime.autocast():
            outputs = self.runtime.forward(part.interface, inputs, pad)
            sums = losses.sums(outputs, targets, batch.target_valid.to(self.device))
        return losses.aggregate(rank_means(sums, counts, self.ranks)), sums, inputs

    def _flush(self, planned: bool) -> None:
        """Close the accumulation window.

        Drop the dataset's frozen gradients (before unscaling and overflow detection), average over the
        actual microbatch count, step. A snapshot inside a planned window (`planned` false) updates at the
        window's learning rate without advancing a batch-stepped scheduler: the rest of the window makes the
        planned update, so the schedule has the plan's length whatever the snapshots.
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
        PROFILE.step(OPTIMIZER, self.device, self.optimization.step, planned)
        self.progress.global_step += 1

    def _common(self, phase: str) -> dict:
        p = self.progress
        return dict(phase=phase, epoch=p.global_epoch, global_step=p.global_step, learning_rate=p.epoch_learning_rate)

    def _validate(self, phase: str, epoch: int, snapshot_batch: int | None = None) -> dict[str, Evaluation]:
        common = self._common(phase) | {"epoch": epoch}
        return timed("validation")(self.validator.run)(self.records, common, snapshot_batch)

    def _finish(self) -> TrainResult:
        last_epoch = self.progress.completed_epochs
        check_weights(self.network, f"the end of epoch {last_epoch}")
        last_state = model_state(self.network, self.sharded)
        best = (self.best_state, self.monitor.best_epoch) if self.best_state is not None else None
        export = timed("export")(export_run)
        exported = export(self.spec, self.device, (last_state, last_epoch), best) if self.ranks.is_main else []
        evaluation = self.last_evaluation
        monitored = evaluation.get(self.monitor.source) if evaluation and self.monitor.source else None
        return TrainResult(
            model_name=self.spec.model_name,
            best_epoch=self.monitor.best_epoch,
            monitored_loss=self.monitor.best_value,
            final_validation=dict(monitored.losses) if monitored else {},
            final_baseline=dict(monitored.baseline) if monitored else {},
            exported=[str(p) for p in exported],
            evaluated=bool(self.spec.config.evaluation),
        )


def train(spec: RunSpec, ranks: Ranks = SINGLE) -> TrainResult:
    """Train one run spec end to end in this process (as rank `ranks.rank` of a distributed run)."""
    training = spec.config.global_training
    check_network_fits(spec.network, largest_pass_tokens(training, torch.device(spec.config.device)))
    with claimed_outputs(spec, writes=ranks.is_main):
        trainer = Trainer(spec, ranks=ranks)
        if trainer.device.type == "cpu":
            keep_freed_memory()
        return trainer.run()
