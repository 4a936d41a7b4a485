"""Next-event quality of this project's sequifier against the established release 3.1.1.0, on fresh synthetic data.

    .venv/bin/python bench/compare_reference.py [--reference-venv /tmp/ref] [--context-length 32 128]
        [--prediction-length 1 ctx] [--epochs 3] [--seed 0] [--width 32] [--dropout 0] [--workdir DIR]

The reference release lives in its own venv and is never a dependency of this project; create it with
    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install torch==2.13.0 sequifier==3.1.1.0
Both tools run as CLI subprocesses in their own project folders under the work folder. Per context length the
data is preprocessed once by 3.x (both tools train on that stored layout) and once by this project, to compare
the two layouts. Per combination both train the same config and infer ONNX probabilities on split 2; the rows
they write are joined on (sequenceId, subsequenceId, itemPosition) and with the true event at that position.
The table gives rows written and joined, and mean cross-entropies (nats) of the true event over all joined rows
and over the joined rows that are the first item of their split (3.x stores a split apart from earlier ones, so
such an item is predicted from left padding alone). `oracle` is the generating chain's own cross-entropy given
what the window shows: the previous event, or nothing for a split's first item.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import yaml

OURS = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "sequifier"
N_EVENTS = 16
N_SEQUENCES = 400
TARGET = "event"
ID_COLUMNS = ("sequenceId", "subsequenceId", "itemPosition")
IDENTIFIERS = {*ID_COLUMNS, "windowStartOffset"}  # the columns of an output table that are not classes
Key = tuple[int, int, int]  # sequenceId, subsequenceId, itemPosition
Truth = dict[tuple[int, int], int]  # (sequenceId, itemPosition) -> event
Scores = tuple[int, dict[Key, float]]  # rows written, cross-entropy per row with a true event


@dataclass(frozen=True)
class Chain:
    transitions: np.ndarray  # [N_EVENTS, N_EVENTS], rows sum to 1
    stationary: np.ndarray  # [N_EVENTS]; sequences start from it

    @property
    def entropy_rate(self) -> float:
        return float(self.stationary @ -(self.transitions * np.log(self.transitions)).sum(axis=1))


def make_chain(rng: np.random.Generator) -> Chain:
    transitions = rng.dirichlet(np.full(N_EVENTS, 0.3), size=N_EVENTS) + 1e-4
    transitions /= transitions.sum(axis=1, keepdims=True)
    return Chain(transitions, np.linalg.matrix_power(transitions, 1024)[0])


def sample_events(chain: Chain, rng: np.random.Generator) -> list[np.ndarray]:
    """A quarter of the sequences are short (2-11 items), the rest 30-599 items long."""
    short = rng.random(N_SEQUENCES) < 0.25
    lengths = np.where(short, rng.integers(2, 12, N_SEQUENCES), rng.integers(30, 600, N_SEQUENCES))
    cumulative = np.cumsum(chain.transitions, axis=1)
    sequences = []
    for length in lengths:
        events = np.empty(length, dtype=np.int64)
        events[0] = rng.choice(N_EVENTS, p=chain.stationary)
        for position, draw in enumerate(rng.random(length - 1), start=1):
            events[position] = min(np.searchsorted(cumulative[events[position - 1]], draw), N_EVENTS - 1)
        sequences.append(events)
    return sequences


def write_raw_table(sequences: list[np.ndarray], rng: np.random.Generator, path: Path) -> None:
    """`amount` is an event-dependent real: an input the models may use, not a target."""
    events = np.concatenate(sequences)
    amount_means = rng.uniform(-5.0, 20.0, N_EVENTS)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "sequenceId": np.repeat(np.arange(len(sequences)), [len(s) for s in sequences]),
                "itemPosition": np.concatenate([np.arange(len(s)) for s in sequences]),
                TARGET: [event_name(e) for e in events],
                "amount": amount_means[events] + rng.normal(0.0, 2.0, len(events)),
            }
        ),
        path,
    )


def event_name(event: int) -> str:
    return f"ev{event:02d}"


def preprocess_config(context_length: int) -> dict:
    return {
        "project_root": ".",
        "preprocessing_data_path": "data/events.parquet",
        "read_format": "parquet",
        "write_format": "parquet",
        "merge_output": True,
        "selected_columns": [TARGET, "amount"],
        "split_ratios": [0.8, 0.1, 0.1],
        "split_method": "within_sequence",
        "window_length": context_length + 1,
        "window_stride": context_length,
        "max_target_offset": 1,
        "seed": 1010,
        "n_cores": 1,
    }


def train_config(
    context_length: int, prediction_length: int, epochs: int, seed: int, width: int = 32, dropout: float = 0.0
) -> dict:
    """Only fields that mean the same in both tools; 3.x's defaults differ in scheduler and torch_compile.

    The model is `width` wide (a quarter of it the real feature's embedding), with a feed-forward twice as wide.
    """
    return {
        "project_root": ".",
        "model_name": "compare",
        "device": "cpu",
        "seed": seed,
        "global_training": {
            "read_format": "parquet",
            "training_objective": "causal",
            "context_length": context_length,
            "target_offset": 1,
            "inference_batch_size": 64,
            "batch_size": 32,
            "learning_rate": 0.003,
            "optimizer": {"name": "AdamW", "weight_decay": 0.01},
            "scheduler": {"name": "StepLR", "step_size": 1, "gamma": 0.99},
            "scheduler_step_on": "epoch",
            "torch_compile": "none",
        },
        "model": {
            "backbone": {
                "architecture": {
                    "dim_model": width,
                    "max_context_length": context_length,
                    "num_layers": 2,
                    "attention": {"type": "mha", "n_heads": 4, "n_kv_heads": 4, "output_projection": True},
                    "feed_forward": {"dim": 2 * width, "activation": "swiglu"},
                    "normalization": {"type": "rmsnorm", "norm_first": True},
                    "position_encoding": {"type": "rope", "theta": 10000},
                    "dropout": dropout,
                    "shared_layer_groups": [],
                }
            },
            "interface": {
                "input_columns": [TARGET, "amount"],
                "target_columns": [TARGET],
                "ingestion": {
                    "type": "embedding",
                    "output_dim": width,
                    "feature_embedding_dims": {TARGET: width - width // 4, "amount": width // 4},
                },
                "decoder": {"type": "linear", "prediction_length": prediction_length, "support": 1},
            },
        },
        "dataset": {
            "part": {"metadata_config_path": "configs/metadata_configs/events.json"},
            "criterion": {TARGET: "CrossEntropyLoss"},
        },
        "training_plan": {"epochs": epochs},
        "evaluation": True,
        "export_onnx": True,
        "export_pt": False,
    }


def infer_config(model_path: str) -> dict:
    """One infer.yaml both tools accept unchanged."""
    return {
        "project_root": ".",
        "model_path": model_path,
        "data_path": "data/events-split2.parquet",
        "device": "cpu",
        "model_type": "generative",
        "output_probabilities": True,
        "decode_categories": True,
        "inference_batch_size": 64,
        "write_format": "csv",
    }


def write_yaml(path: Path, config: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def run_tool(executable: Path, project: Path, *arguments: str) -> None:
    log = project / f"{arguments[0]}.out"
    with log.open("w") as stream:
        done = subprocess.run([str(executable), *arguments], cwd=project, stdout=stream, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text().strip().splitlines()[-5:]
        raise RuntimeError(
            f"{executable} {arguments[0]} failed in {project} (exit {done.returncode}):\n" + "\n".join(tail)
        )


def compare_layouts(reference: Path, ours: Path) -> str:
    """Whether this project's metadata and stored splits equal 3.x's, reals up to rounding."""
    files = ["configs/metadata_configs/events.json"] + [f"data/events-split{split}.parquet" for split in range(3)]
    differing = [
        name for name in files if not nearly_equal(stored_content(reference / name), stored_content(ours / name))
    ]
    return f"differ in {', '.join(differing)}" if differing else "match (reals within 1e-9 relative)"


def stored_content(path: Path) -> dict:
    if path.suffix == ".json":
        return json.loads(path.read_text())
    table = pq.read_table(path)
    return {"schema": [str(field) for field in table.schema], **table.to_pydict()}


def nearly_equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(nearly_equal(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(nearly_equal, a, b))
    return a == b


def read_parts(folder: Path) -> pa.Table:
    return pa.concat_tables([pa_csv.read_csv(path) for path in sorted(folder.glob("part-*.csv"))])


def probabilities(project: Path, model_stem: str) -> tuple[list[Key], list[str], np.ndarray]:
    """Row keys, class names and [rows, classes] probabilities. 3.x's probability files hold only the class
    columns, row-aligned with its prediction files, so the keys come from the predictions."""
    table = read_parts(project / "outputs/probabilities" / model_stem / TARGET)
    keyed = table if "sequenceId" in table.column_names else read_parts(project / "outputs/predictions" / model_stem)
    keys = list(zip(*(keyed[name].to_pylist() for name in ID_COLUMNS)))
    classes = [name for name in table.column_names if name not in IDENTIFIERS]
    return keys, classes, np.column_stack([table[name].to_numpy() for name in classes])


def cross_entropies(keys: list[Key], classes: list[str], matrix: np.ndarray, truth: Truth) -> dict[Key, float]:
    """Per row: -log of the probability given to the true event; rows without a true event are left out."""
    column_of = {name: index for index, name in enumerate(classes)}
    scored = {}
    for row, key in enumerate(keys):
        event = truth.get((key[0], key[2]))
        if event is not None:
            scored[key] = -math.log(max(float(matrix[row, column_of[event_name(event)]]), 1e-12))
    return scored


def split_starts(stored_split: Path) -> dict[tuple[int, int], int]:
    """(sequenceId, subsequenceId) -> first itemPosition of the split, from the stored windows."""
    table = pq.read_table(stored_split, columns=["sequenceId", "subsequenceId", "splitStartItemPosition"])
    return {(s, w): start for s, w, start in zip(*(table[name].to_pylist() for name in table.column_names))}


def oracle(key: Key, truth: Truth, starts: dict[tuple[int, int], int], chain: Chain) -> float:
    """The chain's own cross-entropy for the row: the previous event is in the window unless the split starts here."""
    sequence, _, position = key
    if position > starts[key[:2]]:
        return -math.log(chain.transitions[truth[(sequence, position - 1)], truth[(sequence, position)]])
    return -math.log(chain.stationary[truth[(sequence, position)]])


def trained_scores(tool: str, project: Path, context: int, prediction: int, args, truth: Truth) -> Scores:
    """Train and infer with one tool in its copy of the data project: rows written, cross-entropy per row."""
    config = train_config(context, prediction, args.epochs, args.seed, args.width, args.dropout)
    write_yaml(project / "configs/train.yaml", config)
    run_tool(args.tools[tool], project, "train", "--config-path", "configs/train.yaml")
    model_stem = f"compare-last-{args.epochs}"
    write_yaml(project / "configs/infer.yaml", infer_config(f"models/{model_stem}.onnx"))
    run_tool(args.tools[tool], project, "infer", "--config-path", "configs/infer.yaml")
    keys, classes, matrix = probabilities(project, model_stem)
    return len(keys), cross_entropies(keys, classes, matrix, truth)


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def compare(context: int, prediction: int, data_project: Path, args, truth: Truth, chain: Chain) -> list[str]:
    """One table row: rows written and joined, then mean cross-entropies over the joined rows and their first items."""
    written, scores = {}, {}
    for tool in args.tools:
        project = data_project.parent / f"prediction-{prediction}" / tool
        shutil.copytree(data_project, project)
        try:
            written[tool], scores[tool] = trained_scores(tool, project, context, prediction, args, truth)
        except RuntimeError as error:
            print(error)
            written[tool], scores[tool] = 0, {}
    starts = split_starts(data_project / "data/events-split2.parquet")
    common = sorted(scores["3.x"].keys() & scores["ours"].keys())
    first = [key for key in common if key[2] == starts[key[:2]]]

    def means(keys: list[Key]) -> list[str]:
        values = [mean([scores[tool][key] for key in keys]) for tool in args.tools]
        return [f"{v:.4f}" for v in values + [mean([oracle(key, truth, starts, chain) for key in keys])]]

    counts = [written["3.x"], written["ours"], len(common)]
    return [str(context), str(prediction)] + [str(n) for n in counts] + means(common) + [str(len(first))] + means(first)


def preprocess_both(context: int, workdir: Path, args) -> Path:
    """3.x's stored layout, which both tools train on, and ours beside it; prints whether they match."""
    data_project = workdir / f"context-{context}" / "data"
    ours_project = workdir / f"context-{context}" / "ours-preprocess"
    for tool, project in (("3.x", data_project), ("ours", ours_project)):
        write_yaml(project / "configs/preprocess.yaml", preprocess_config(context))
        (project / "data").mkdir()
        shutil.copy(workdir / "events.parquet", project / "data" / "events.parquet")
        run_tool(args.tools[tool], project, "preprocess", "--config-path", "configs/preprocess.yaml")
    print(f"context {context}: our preprocess vs 3.x: {compare_layouts(data_project, ours_project)}")
    return data_project


def print_table(rows: list[list[str]]) -> None:
    header = [
        "ctx",
        "pred",
        "rows 3.x",
        "rows ours",
        "common",
        "CE 3.x",
        "CE ours",
        "oracle",
        "first",
        "first 3.x",
        "first ours",
        "first oracle",
    ]
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
    for row in [header] + rows:
        print("  ".join(cell.rjust(width) for cell, width in zip(row, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference-venv", type=Path, default=Path("/tmp/ref"), help="venv with sequifier 3.1.1.0")
    parser.add_argument("--context-length", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--prediction-length", nargs="+", default=["1", "ctx"], help="integers; ctx = context length")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="seeds the data and both trainings")
    parser.add_argument("--width", type=int, default=32, help="dim_model (this project's bf16 autocast from 128 on)")
    parser.add_argument("--dropout", type=float, default=0.0, help="architecture.dropout of both tools")
    parser.add_argument("--workdir", type=Path, help="new folder for the projects (default: a new temporary folder)")
    args = parser.parse_args()
    args.tools = {"3.x": args.reference_venv / "bin" / "sequifier", "ours": OURS}
    if not args.tools["3.x"].exists():
        parser.error(f"{args.tools['3.x']} does not exist; --help says how to create the reference venv")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sequifier-compare-"))
    rng = np.random.default_rng(args.seed)
    chain = make_chain(rng)
    sequences = sample_events(chain, rng)
    truth = {(s, p): int(e) for s, events in enumerate(sequences) for p, e in enumerate(events)}
    write_raw_table(sequences, rng, workdir / "events.parquet")
    stationary_entropy = float(-(chain.stationary * np.log(chain.stationary)).sum())
    print(f"work folder {workdir}: {len(sequences)} sequences, {len(truth)} items, {N_EVENTS} events")
    print(
        f"uniform guess {math.log(N_EVENTS):.4f}; chain entropy rate {chain.entropy_rate:.4f}; "
        f"first item without context (stationary entropy) {stationary_entropy:.4f}"
    )
    rows = []
    for context in args.context_length:
        data_project = preprocess_both(context, workdir, args)
        for prediction in dict.fromkeys(context if p == "ctx" else int(p) for p in args.prediction_length):
            rows.append(compare(context, prediction, data_project, args, truth, chain))
    print_table(rows)


if __name__ == "__main__":
    main()
