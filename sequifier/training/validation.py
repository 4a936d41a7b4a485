"""Validation during training: each evaluation source's losses beside the persistence baseline, written and logged.

Totals are summed over the parts of a source and over the ranks of a distributed run, so every
value equals the one-process value on the same data. Class shares are counted at the same time.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterator

import torch

from sequifier.config.errors import UserError
from sequifier.config.resolve import RunSpec
from sequifier.data.datasets import PartData
from sequifier.distributed.parallel import reshard
from sequifier.distributed.ranks import Ranks
from sequifier.distributed.totals import summed_totals
from sequifier.model.network import SequifierNetwork
from sequifier.progress import Progress
from sequifier.training.class_shares import class_share_rows
from sequifier.training.evaluation import Evaluation, Totals, counted_targets, evaluate_split, summarize
from sequifier.training.losses import TargetLosses
from sequifier.training.passes import validation_rows
from sequifier.training.reporting import RunRecords
from sequifier.training.runtime import TrainingRuntime

logger = logging.getLogger("sequifier")


class Validator:
    def __init__(
        self,
        spec: RunSpec,
        parts: dict[tuple[str, str], PartData],
        losses: dict[str, TargetLosses],
        network: SequifierNetwork,
        runtime: TrainingRuntime,
        ranks: Ranks,
        sharded: bool,
        device: torch.device,
    ):
        self.spec, self.parts, self.losses, self.network = spec, parts, losses, network
        self.runtime, self.ranks, self.sharded, self.device = runtime, ranks, sharded, device

    def _sources(self) -> Iterator[tuple[str, str, str, list[tuple[str, PartData]]]]:
        """(source, dataset, part or "", the parts it validates on) of every evaluation source."""
        evaluation = self.spec.config.evaluation
        for source in evaluation.sources if evaluation else ():
            dataset, _, only_part = source.source.partition(".")
            chosen = [
                (part, data)
                for (d, part), data in self.parts.items()
                if d == dataset and (not only_part or part == only_part) and data.validation is not None
            ]
            yield source.source, dataset, only_part, chosen

    def check_scoreable(self) -> None:
        """Before any step: every weighted target has values that the validation views of each source count;
        else its validation loss, and with it the best model, would be undefined."""
        for source, dataset, _, chosen in self._sources():
            losses = self.losses[dataset]
            combined = Totals()
            for _, data in chosen:
                rows = validation_rows(self.spec.config.global_training, data.shape.context_length, self.device)
                counts = counted_targets(data.validation, data.shape, losses, rows)
                combined.add(summed_totals(counts, self.ranks))
            unscored = [t.name for t in losses.targets if losses.weights[t.name] > 0 and not combined.count[t.name]]
            if chosen and unscored:
                raise UserError(
                    "evaluation.sources",
                    f"the validation split of {source} holds no value of the target {unscored[0]!r} to score (every "
                    "one is missing or padding), so its validation loss would be undefined; preprocess so that the "
                    f"validation split has values of {unscored[0]!r}, or give it a loss weight of 0",
                )

    def run(self, records: RunRecords, common: dict, snapshot_batch: int | None = None) -> dict[str, Evaluation]:
        """Evaluation of every evaluation source (its parts' totals combined), with its rows in `records`; one at a
        snapshot within the epoch names its batch."""
        moment = f"epoch {common['epoch']}" + (
            "" if snapshot_batch is None else f", snapshot at batch {snapshot_batch}"
        )
        results = {}
        for source, dataset, only_part, chosen in self._sources():
            losses = self.losses[dataset]
            combined = Totals()
            views = sum(len(data.validation) for _, data in chosen) * self.ranks.world_size
            display = Progress(f"validation {source} ({moment})", views, "views", enabled=self.ranks.is_main)
            counted = lambda n, shown=display: shown.advance(n * self.ranks.world_size)
            for part, data in chosen:
                part_totals = summed_totals(self._evaluated(data, losses, counted), self.ranks)
                combined.add(part_totals)
                records.validation(common, dataset, part, summarize(part_totals, losses), aggregate_only=False)
            display.close()
            result = summarize(combined, losses)
            results[source] = result
            rows = class_share_rows(self.network, self.spec, self.parts, source, self.device, self.ranks)
            if self.sharded:
                reshard(self.network)  # forwards without backward leave the whole weights gathered
            records.class_shares(common, dataset, only_part, rows)
            records.validation(common, dataset, only_part, result, aggregate_only=True)
            per_target = ", ".join(
                f"{t} {result.losses[t]:.4f} (baseline {result.baseline[t]:.4f})" for t in result.losses
            )
            logger.info(
                "%s validation loss %.4f (persistence baseline %.4f) on %s: %s",
                moment, result.loss, result.baseline_loss, source, per_target,
            )  # fmt: skip
        return results

    def _evaluated(self, data: PartData, losses: TargetLosses, on_batch: Callable[[int], None]) -> Totals:
        return evaluate_split(
            self.network,
            data.interface,
            data.validation,
            data.shape,
            data.input_columns,
            losses,
            validation_rows(self.spec.config.global_training, data.shape.context_length, self.device),
            self.device,
            self.runtime.autocast(),
            on_batch,
        )
