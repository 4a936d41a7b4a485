"""The run's records as training goes: the text log, and per dataset the training and validation metric files (and
the validation class shares of a dataset with class_share_log_columns)."""

from __future__ import annotations

import logging
from pathlib import Path

from sequifier.config.resolve import RunSpec
from sequifier.training.evaluation import Evaluation, Totals
from sequifier.training.losses import TargetLosses
from sequifier.training.metrics import CLASS_SHARE_FIELDS, FILES, MetricsFile, attach_log_file
from sequifier.training.tensorboard import mirrored

logger = logging.getLogger("sequifier")
CLASS_SHARES = "validation-class-shares.csv"


class RunRecords:
    """Opens the log and metric files of a run (cut back to a checkpoint's lengths on resume) and writes their rows."""

    def __init__(self, spec: RunSpec, run_id: str, keep_bytes: dict[str, int] | None = None, enabled: bool = True):
        """`enabled` false (ranks other than 0): losses are still computed, nothing is written."""
        self.handler = attach_log_file(spec.logs_dir, spec.model_name) if enabled else None
        self.files: dict[str, tuple[MetricsFile, MetricsFile]] = {}
        self.class_share_files: dict[str, MetricsFile] = {}
        for dataset in spec.config.dataset_training if enabled else ():
            folder = spec.dataset_view(dataset).logs_dir
            if spec.config.dataset_training[dataset].class_share_log_columns:
                path = folder / CLASS_SHARES
                kept = self._kept(keep_bytes, path, spec)
                self.class_share_files[dataset] = MetricsFile(path, run_id, kept, CLASS_SHARE_FIELDS)
            opened = [MetricsFile(folder / name, run_id, self._kept(keep_bytes, folder / name, spec)) for name in FILES]
            self.files[dataset] = (opened[0], opened[1])
            if spec.config.global_training.tensorboard:
                self.files[dataset] = mirrored(self.files[dataset], run_id)
        self.project_root = spec.project_root

    def _kept(self, keep_bytes: dict[str, int] | None, path: Path, spec: RunSpec) -> int | None:
        if keep_bytes is None:
            return None
        return keep_bytes.get(str(path.relative_to(spec.project_root)), 0)

    def folders(self) -> tuple[str, ...]:
        """The logs/<model>/ folders holding the run's metric files."""
        return tuple(sorted({str(f.path.parent) for pair in self.files.values() for f in pair}))

    def sizes(self) -> dict[str, int]:
        """Bytes of every metric file (relative path -> size), recorded in checkpoints."""
        files = [*(f for pair in self.files.values() for f in pair), *self.class_share_files.values()]
        return {str(f.path.relative_to(self.project_root)): f.size() for f in files}

    def training_epoch(
        self, common: dict, losses: dict[str, TargetLosses], totals: dict[tuple[str, str], Totals]
    ) -> float:
        """Per-part, per-target training losses and each dataset's aggregate; returns the mean aggregate."""
        aggregates = []
        for dataset, target_losses in losses.items():
            combined = Totals()
            for (d, part), part_totals in totals.items():
                if d != dataset or not part_totals.count:
                    continue
                combined.add(part_totals)
                for target, value in _means(part_totals).items() if self.handler else ():
                    self.files[dataset][0].write(
                        **common, dataset=dataset, part=part, target=target, metric="loss", value=value
                    )
            if combined.count:
                aggregate = float(target_losses.aggregate(_means(combined)))
                aggregates.append(aggregate)
                if self.handler:
                    self.files[dataset][0].write(
                        **common, dataset=dataset, part="", target="aggregate", metric="loss", value=aggregate
                    )
                logger.info("epoch %d (%s) %s training loss %.4f", common["epoch"], common["phase"], dataset, aggregate)
        return sum(aggregates) / len(aggregates) if aggregates else float("nan")

    def validation(self, common: dict, dataset: str, part: str, result: Evaluation, aggregate_only: bool) -> None:
        if not self.handler:
            return
        rows = (
            [("aggregate", result.loss, result.baseline_loss)]
            if aggregate_only
            else [(t, result.losses[t], result.baseline[t]) for t in result.losses]
        )
        for target, loss, baseline in rows:
            for metric, value in (("loss", loss), ("baseline_loss", baseline)):
                self.files[dataset][1].write(
                    **common, dataset=dataset, part=part, target=target, metric=metric, value=value
                )

    def class_shares(self, common: dict, dataset: str, part: str, rows: list[dict]) -> None:
        """Rows of class_shares.class_share_rows for one evaluation source."""
        if not self.handler:
            return
        for row in rows:
            self.class_share_files[dataset].write(**common, dataset=dataset, part=part, **row)

    def close(self) -> None:
        for pair in self.files.values():
            for metrics_file in pair:
                metrics_file.close()
        for metrics_file in self.class_share_files.values():
            metrics_file.close()
        if self.handler:
            logger.removeHandler(self.handler)
            self.handler.close()


def _means(totals: Totals) -> dict[str, float]:
    return {t: totals.loss[t] / max(totals.count[t], 1) for t in totals.loss}
