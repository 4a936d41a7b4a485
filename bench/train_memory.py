"""Peak RSS of `sequifier train` as the training data grows: after loading, and after a capped number of steps.

    .venv/bin/python bench/train_memory.py [--windows 4000 40000] [--steps 40] [--repeats 1] [--workdir DIR]

For each size, the pt data and config of bench/train_against_reference.py (seed-shaped model, context 128,
batch 64, dropout 0.1) are prepared once; then `sequifier train` runs in a fresh child process with all of the
data loaded (both splits) but each epoch's plan cut to its first `--steps` batches, so the 10x-data run costs
as much time as the small one. The child reports its resident set when the plan is first asked for (after
imports, network and data loading, before the first step), its peak until then, and its peak at exit
(after validation on the whole validation split and ONNX export). The last column is each size's peak over
the first size's peak in the same repeat.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from train_against_reference import prepare_data, train_config, write_yaml

CHILD = """
import json, sys, time
started = time.perf_counter()
from sequifier import cli
import sequifier.training.engine as engine
from sequifier.training.profile import resident_mib
from sequifier.training.profile_report import peak_rss_mib  # this process's own, not the bench's at the fork

steps, seen = int(sys.argv[1]), {}
planned = engine.phase_epoch

def capped(*args, **kwargs):
    if not seen:
        peak = peak_rss_mib()
        seen.update(loaded_mib=resident_mib(), loaded_peak_mib=peak, loaded_s=time.perf_counter() - started)
    return planned(*args, **kwargs)[:steps]

engine.phase_epoch = capped
code = cli.main(["train", "--config-path", "configs/train.yaml", "--quiet", *sys.argv[2:]])
seen.update(rc=code, peak_mib=peak_rss_mib(),
            wall_s=time.perf_counter() - started)
print("MEMORY " + json.dumps(seen))
"""


def measured(project: Path, steps: int, overrides: list[str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(steps), *overrides], cwd=project, capture_output=True, text=True
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("MEMORY ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"training failed in {project}:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1].removeprefix("MEMORY "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", type=int, nargs="+", default=[4000, 40000], help="training windows per size")
    parser.add_argument("--steps", type=int, default=40, help="training steps per epoch (the plan's first batches)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--override", nargs="*", default=[], help="config overrides, e.g. key=value")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sequifier-memory-"))
    projects = {}
    for windows in args.windows:
        projects[windows] = prepare_data(workdir / f"w{windows}", windows)
        write_yaml(projects[windows] / "configs" / "train.yaml", train_config(1, 0.1))
    print(f"{'windows':>8} {'run':>3} {'loaded s':>8} {'loaded MiB':>10} {'peak MiB':>9} {'wall s':>7} {'x first':>7}")
    for repeat in range(args.repeats):
        first_peak = None
        for windows, project in projects.items():
            result = measured(project, args.steps, args.override)
            first_peak = first_peak or result["peak_mib"]
            print(
                f"{windows:>8} {repeat + 1:>3} {result['loaded_s']:>8.1f} {result['loaded_mib']:>10.0f} "
                f"{result['peak_mib']:>9.0f} {result['wall_s']:>7.1f} {result['peak_mib'] / first_peak:>7.2f}"
            )


if __name__ == "__main__":
    main()
