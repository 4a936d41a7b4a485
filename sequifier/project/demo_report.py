"""After `make demo`: compares the final validation loss of the event target with the baseline and the floor.

python -m sequifier.project.demo_report demo
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from sequifier.project.scaffold import DEMO_FACTS

FLOOR_MARGIN = 1.03


def final_validation(metrics_file: Path, target: str) -> tuple[int, float, float]:
    """(epoch, loss, baseline_loss) of `target` in the last validated epoch."""
    rows = [r for r in csv.DictReader(metrics_file.open()) if r["target"] == target]
    last_epoch = max(int(r["epoch"]) for r in rows)
    values = {r["metric"]: float(r["value"]) for r in rows if int(r["epoch"]) == last_epoch}
    return last_epoch, values["loss"], values["baseline_loss"]


def main(project: Path) -> int:
    floor = json.loads((project / DEMO_FACTS).read_text())["entropy_rate_nats"]
    metrics_files = sorted((project / "logs").glob("*/validation-metrics.csv"))
    if not metrics_files:
        print(f"no validation metrics under {project / 'logs'}", file=sys.stderr)
        return 1
    epoch, loss, baseline = final_validation(metrics_files[-1], "event")
    print(f"\ndemo result (epoch {epoch}, target 'event'):")
    print(f"  validation loss        {loss:.4f} nats")
    print(f"  persistence baseline   {baseline:.4f} nats   model below baseline: {'yes' if loss < baseline else 'NO'}")
    print(f"  entropy floor          {floor:.4f} nats   ratio to floor: {loss / floor:.3f} (target <= {FLOOR_MARGIN})")
    predictions = sorted((project / "outputs" / "predictions").glob("*/part-000.csv"))
    for path in predictions:
        print(f"  predictions            {path}")
    return 0 if loss < baseline and loss <= FLOOR_MARGIN * floor else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "demo")))
