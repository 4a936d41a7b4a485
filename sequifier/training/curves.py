"""Loss curves as pictures: logs/<model>/curves.png of one run, and sweep.png comparing a sweep's jobs.

Drawn with matplotlib's headless Agg canvas (no display, no pyplot state) and written atomically.
"""

from __future__ import annotations

import io
import logging
import math
import re
import warnings
from pathlib import Path

from sequifier.atomic import write_bytes_atomic
from sequifier.config.errors import UserError, did_you_mean
from sequifier.training.history import History, has_rows, read_history

CURVES_FILE = "curves.png"
SWEEP_FILE = "sweep.png"
logger = logging.getLogger("sequifier")
PANEL_INCHES = (5.0, 3.2)


def _figure(panels: int):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    columns = min(panels, 3)
    rows = math.ceil(panels / columns)
    figure = Figure(figsize=(PANEL_INCHES[0] * columns, PANEL_INCHES[1] * rows), layout="constrained")
    FigureCanvasAgg(figure)
    axes = [figure.add_subplot(rows, columns, i + 1) for i in range(panels)]
    for each in axes:
        each.xaxis.set_major_locator(MaxNLocator(integer=True))
        each.set_xlabel("epoch")
        each.set_ylabel("loss")
        each.grid(alpha=0.3)
    return figure, axes


def _save(figure, path: Path) -> Path:
    buffer = io.BytesIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figure.savefig(buffer, format="png", dpi=100)
    glyphs = [w for w in caught if re.match(r"Glyph .* missing from font", str(w.message))]
    if glyphs:  # matplotlib warns once per character, with its own source line
        logger.info("%s: the font draws some characters of the column names as boxes", path)
    for other in caught:
        if other not in glyphs:
            warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
    write_bytes_atomic(path, buffer.getvalue())
    return path


def _line(axes, by_epoch: dict[int, float], **style) -> None:
    """One series over epochs; a lone point of a series drawn without markers gets a dash, to be seen."""
    epochs = sorted(by_epoch)
    style = {"marker": "o", "markersize": 3} | style
    if len(epochs) == 1 and style["marker"] is None:
        style |= {"marker": "_", "markersize": 24}
    axes.plot(epochs, [by_epoch[e] for e in epochs], **style)


def check_floors(folder: Path, history: History, floors: dict[str, float] | None) -> list[str]:
    """The series names of `history`; a UserError when `floors` names a target the folder has not."""
    names = history.names() or ["aggregate"]
    unknown = sorted(set(floors or {}) - set(names))
    if unknown:
        raise UserError(
            "--floor",
            f"{folder} has no target {unknown[0]!r}{did_you_mean(unknown[0], names)}; its targets: {', '.join(names)}",
        )
    return names


def draw_curves(folder: Path, floors: dict[str, float] | None = None) -> Path:
    """Draw folder/curves.png from the metric files in `folder`: per target, training and validation loss per epoch,
    the persistence baseline dashed, phase boundaries as vertical lines, and any known loss floor of a target
    (`floors`, e.g. the entropy rate of the demo's generator) dotted. Returns the picture's path.
    """
    history = read_history(folder)
    names = check_floors(folder, history, floors)
    figure, panels = _figure(len(names))
    training, validation = history.series("training"), history.series("validation")
    baseline = history.series("validation", "baseline_loss")
    for axes, name in zip(panels, names):
        if name in training:
            _line(axes, training[name], label="training", color="tab:blue")
        if name in validation:
            _line(axes, validation[name], label="validation", color="tab:orange")
        if name in baseline:
            _line(axes, baseline[name], label="persistence baseline", color="tab:gray", linestyle="--", marker=None)
        if floors and name in floors:
            axes.axhline(floors[name], color="tab:green", linestyle=":", label=f"loss floor {floors[name]:.4f}")
        _mark_phases(axes, history)
        axes.set_title(name)
        if axes.has_data():
            axes.legend(fontsize="small")
    figure.suptitle(f"{Path(folder).resolve().name} ({history.dataset})" if history.dataset else Path(folder).name)
    return _save(figure, Path(folder) / CURVES_FILE)


def draw_run_curves(folders: tuple[str, ...]) -> None:
    """Redraw the curves of a running run; a picture that cannot be drawn is logged, never fatal to training."""
    for folder in filter(has_rows, folders):  # a dataset neither trained nor evaluated has no curves to draw
        try:
            draw_curves(Path(folder))
        except Exception as error:  # a picture must not end a run
            logger.warning("could not draw %s: %s", Path(folder) / CURVES_FILE, error)


def _mark_phases(axes, history: History) -> None:
    for epoch, phase in history.phase_starts():
        axes.axvline(epoch - 0.5, color="black", linewidth=0.8, linestyle=":")
        axes.annotate(phase, (epoch - 0.5, 0.02), xycoords=("data", "axes fraction"), fontsize="small", va="bottom")


def draw_sweep(jobs: list[tuple[str, list[Path]]], path: Path) -> Path:
    """Draw `path` comparing the validation loss per epoch (aggregate) of each (label, logs folders) job."""
    figure, (axes,) = _figure(1)
    for label, folders in jobs:
        for folder in folders:
            validation = read_history(folder).series("validation").get("aggregate", {})
            if validation:
                _line(axes, validation, label=label if len(folders) == 1 else f"{label} ({Path(folder).name})")
    axes.set_title("validation loss per job")
    if axes.has_data():
        axes.legend(fontsize="small")
    return _save(figure, path)
