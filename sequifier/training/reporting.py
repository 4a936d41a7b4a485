"""The run's records as training goes: the text log, and per dataset the training and validation metric files (and
the validation class shares of a dataset with class_share_log_columns)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from sequifier.atomic import write_bytes_atomic
from sequifier.config.resolve import RunSpec
from sequifier.training.checkpoint import LATEST, checkpoint_dir
from sequifier.training.cut_rows import drop_cut_rows, keep_cut_rows, put_back_cut_rows
from sequifier.training.evaluation import Evaluation, Totals
from sequifier.training.losses import TargetLosses
from sequifier.training.metrics import CLASS_SHARE_FIELDS, FILES, METRIC_FIELDS, MetricsFile
from sequifier.training.run_log import attach_log_file
from sequifier.training.tensorboard import mirrored

logger = logging.getLogger("sequifier")
CLASS_SHARES = "validation-class-shares.csv"


@dataclass(frozen=True)
class MetricLengths:
    """What a checkpoint says of the metric files: their lengths when it was written, under `model_name`'s logs."""

    by_path: dict[str, int]  # project-relative path -> bytes
    model_name: str


class RunRecords:
    """Opens the log and metric files of a run (cut back to a checkpoint's lengths on resume) and writes their rows.

    A run resumed under another model name carries the rows its checkpoint had written so far over from the
    earlier name's files into the new name's, after whatever those hold already: no file loses a row.
    """

    def __init__(self, spec: RunSpec, run_id: str, resumed: MetricLengths | None = None, enabled: bool = True):
        """`enabled` false (ranks other than 0): losses are still computed, nothing is written."""
        self.handler = attach_log_file(spec.logs_dir, spec.model_name, spec.config) if enabled else None
        self.files: dict[str, tuple[MetricsFile, MetricsFile]] = {}
        self.class_share_files: dict[str, MetricsFile] = {}
        self.project_root = spec.project_root
        self.latest = checkpoint_dir(spec.project_root, spec.model_name) / LATEST
        for dataset in spec.config.dataset_training if enabled else ():
            folder = spec.dataset_view(dataset).logs_dir
            earlier = replace(spec, model_name=resumed.model_name).dataset_view(dataset).logs_dir if resumed else None
            opened = [self._opened(folder / name, earlier, resumed, run_id, METRIC_FIELDS) for name in FILES]
            self.files[dataset] = (opened[0], opened[1])
            if spec.config.dataset_training[dataset].class_share_log_columns:
                shares = self._opened(folder / CLASS_SHARES, earlier, resumed, run_id, CLASS_SHARE_FIELDS)
                self.class_share_files[dataset] = shares
            if spec.config.global_training.tensorboard:
                self.files[dataset] = mirrored(self.files[dataset], run_id)

    def _relative(self, path: Path) -> str:
        return str(path.relative_to(self.project_root))

    def _opened(
        self, path: Path, earlier: Path | None, resumed: MetricLengths | None, run_id: str, fields: tuple[str, ...]
    ) -> MetricsFile:
        """`path` opened for this run's rows: rows an unfinished resume cut put back, rows of the checkpoint's run
        under another model name carried over, then cut back to the checkpoint's length (the rows cut kept aside
        until this run's checkpoint replaces `latest.pt`)."""
        put_back_cut_rows(path, self.latest)
        path = self._resumed(path, earlier, resumed, run_id)
        kept = resumed.by_path.get(self._relative(path)) if resumed else None
        if kept is not None and path.is_file() and path.stat().st_size > kept:
            keep_cut_rows(path, self.latest)
        return MetricsFile(path, run_id, kept, fields)

    def _resumed(self, path: Path, earlier: Path | None, resumed: MetricLengths | None, run_id: str) -> Path:
        """`path` holding, after its rows of other runs, the rows the checkpoint's run had written into its file of
        the same name in `earlier` (so that doing this twice gives the same file)."""
        if resumed is None or earlier is None or earlier == path.parent:
            return path
        source = earlier / path.name
        length = resumed.by_path.get(self._relative(source))
        if length is None or not source.is_file():
            return path
        carried = source.read_bytes()[:length].splitlines(keepends=True)
        if not carried:
            return path
        own = path.read_bytes().splitlines(keepends=True) if path.is_file() else []
        others = [line for line in own[1:] if not line.startswith(run_id.encode() + b",")]
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, b"".join(carried[:1] + others + carried[1:]))
        return path

    def checkpoint_written(self) -> None:
        """This run's checkpoint replaced `latest.pt`: the rows its start cut from the files are no one's now."""
        for metrics_file in self._all_files():
            drop_cut_rows(metrics_file.path)

    def _all_files(self) -> list[MetricsFile]:
        return [*(f for pair in self.files.values() for f in pair), *self.class_share_files.values()]

    def folders(self) -> tuple[str, ...]:
        """The logs/<model>/ folders holding the run's metric files."""
        return tuple(sorted({str(f.path.parent) for pair in self.files.values() for f in pair}))

    def sizes(self) -> dict[str, int]:
        """Bytes of every metric file (relative path -> size), recorded in checkpoints."""
        return {str(f.path.relative_to(self.project_root)): f.size() for f in self._all_files()}

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

    def close(self, after_failure: bool = False) -> None:
        """Close every file; after a failure (a full disk), without raising what closing them meets."""
        for metrics_file in self._all_files():
            try:
                metrics_file.close()
            except OSError:
                if not after_failure:
                    raise
        if self.handler:
            logger.removeHandler(self.handler)
            self.handler.close()


def _means(totals: Totals) -> dict[str, float]:
    return {t: totals.loss[t] / max(totals.count[t], 1) for t in totals.loss}
