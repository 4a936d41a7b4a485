"""Peak RSS of `sequifier infer` as the split grows: a merged Parquet split against a PT shard folder.

    .venv/bin/python bench/infer_memory.py [--windows 20000 200000] [--shard-windows 10000] [--context 64]

For each size, one project holds the same random windows twice (bench/infer_throughput.py's data: one categorical
column, a tenth of the windows left-padded), as a merged Parquet split and as a PT shard folder of
`--shard-windows` windows a shard, and a small untrained model exported as ONNX (dim 32, 1 layer, so that the data,
not the model, sets the memory). Each infer runs in a fresh child process, which reports its own peak resident
set; the last column is each size's peak over the first size's peak for the same form.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import torch
import yaml
from infer_throughput import export_models, write_project

from sequifier.data.folder_metadata import write_folder_metadata
from sequifier.data.metadata import read_metadata
from sequifier.data.pt_shards import pt_payload
from sequifier.data.stored import load_split

CHILD = """
import sys, time
from pathlib import Path
started = time.perf_counter()
from sequifier.infer.runner import run_inference
from sequifier.training.profile_report import peak_rss_mib
run_inference(Path(sys.argv[1]))
print("RESULT", peak_rss_mib(), time.perf_counter() - started)
"""


def write_shards(root: Path, shard_windows: int) -> None:
    """The merged split of `write_project` again as a PT shard folder."""
    stored = load_split(root / "data" / "bench-split0.parquet", ["event"], {"event"})
    folder = root / "data" / "bench-shards"
    folder.mkdir()
    entries = []
    for number, start in enumerate(range(0, len(stored), shard_windows)):
        shard = stored.sliced(start, start + shard_windows)
        name = f"bench-shards-{number:05d}.pt"
        torch.save(pt_payload(shard, {"event": "Int64"}), folder / name)
        entries.append({"path": name, "samples": len(shard)})
    write_folder_metadata(folder, 0, read_metadata(root / "configs" / "bench.json"), entries)


def peak_of_infer(root: Path, data_path: str) -> tuple[float, float]:
    """Peak RSS (MiB) and wall seconds of one `sequifier infer` child process."""
    config = root / "configs" / "infer-memory.yaml"
    config.write_text(yaml.safe_dump({"model_path": "models/bench-last-1.onnx", "data_path": data_path}))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(config)], cwd=root, capture_output=True, text=True, check=True
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT"))
    _, peak, seconds = line.split()
    return float(peak), float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--shard-windows", type=int, default=10_000)
    parser.add_argument("--context", type=int, default=64)
    args = parser.parse_args()
    first: dict[str, float] = {}
    print("| form | windows | split on disk MiB | peak RSS MiB | s | peak / first size's |")
    print("|---|---|---|---|---|---|")
    for windows in args.windows:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            write_project(root, windows, args.context)
            write_shards(root, args.shard_windows)
            export_models(root, args.context, dim=32, layers=1, heads=2, ffn=64)
            forms = {"merged Parquet": "data/bench-split0.parquet", "PT shard folder": "data/bench-shards"}
            for form, data_path in forms.items():
                path = root / data_path
                on_disk = sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size
                peak, seconds = peak_of_infer(root, data_path)
                first.setdefault(form, peak)
                ratio = peak / first[form]
                print(f"| {form} | {windows:,} | {on_disk / 2**20:,.0f} | {peak:,.0f} | {seconds:.1f} | {ratio:.2f} |")
            assert pq.read_metadata(root / forms["merged Parquet"]).num_rows == windows
    print(json.dumps({"shard_windows": args.shard_windows, "context": args.context, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
