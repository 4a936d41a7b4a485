"""Training throughput and MFU on a CUDA GPU: the seed-shaped model and a larger one; float32, bf16, compiled.

    python bench/gpu_throughput.py [--models seed seed-wide large] [--modes fp32 bf16 bf16-compiled] [--steps 50]
    python bench/gpu_throughput.py --grid [--steps 20]

Each model trains on one fixed random batch (bench/train_throughput.py's step: forward and loss, backward,
AdamW) in each mode: fp32 (float32 products, TF32 off, as the trainer leaves them), bf16 (forward and loss
under torch.autocast bfloat16, as `autocast: auto` picks on CUDA 8.0+) and bf16-compiled (the same through
torch.compile of the whole network, as `torch_compile: outer`). Tokens/s counts the targets of the timed steps
(the device synchronized before the clock stops); MFU is model FLOPs per token x tokens/s over the rate of an
8192-sided matrix product in the mode's dtype, measured in the same run; peak GiB is the most the step held
on the device. `--grid` measures where bf16 autocast starts to pay: 2-layer models of dim 128, 256 and 512
(feed-forward 4 x dim) at context 128 and batch 64, 256 and 1024, fp32 against bf16, eager. `--device cpu`
runs the same tables on the CPU (with 1024-sided peaks).
"""

from __future__ import annotations

import argparse
import time

import torch
from train_throughput import matmul_peak, model_flops_per_token, seed_training, synchronize

MODELS = {
    "seed": {"dim": 128, "layers": 2, "heads": 8, "ffn": 512, "context": 128, "batch_size": 64},
    "seed-wide": {"dim": 128, "layers": 2, "heads": 8, "ffn": 512, "context": 128, "batch_size": 1024},
    "large": {"dim": 512, "layers": 8, "heads": 8, "ffn": 2048, "context": 512, "batch_size": 64},
}
GRID = {
    f"d{dim}-b{batch}": {"dim": dim, "layers": 2, "heads": 8, "ffn": 4 * dim, "context": 128, "batch_size": batch}
    for dim in (128, 256, 512)
    for batch in (64, 256, 1024)
}
MODES = {"fp32": (False, False), "bf16": (True, False), "bf16-compiled": (True, True)}


def measure(model: dict, mode: str, steps: int, device: str) -> dict:
    bf16, compiled = MODES[mode]
    torch.manual_seed(0)
    shape = {k: v for k, v in model.items() if k not in ("batch_size", "context")}
    training = seed_training(
        model["batch_size"], model["context"], **shape, device=device, bf16=bf16, compiled=compiled
    )
    if torch.device(device).type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    started = time.perf_counter()
    for _ in range(3):
        training.step()
    synchronize(device)
    warm_up = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(steps):
        training.step()
    synchronize(device)
    elapsed = time.perf_counter() - started
    tokens_per_second = steps * model["batch_size"] * model["context"] / elapsed
    flops = model_flops_per_token(training.network, model["layers"], model["dim"], model["context"])
    peak_gib = torch.cuda.max_memory_allocated(device) / 2**30 if torch.device(device).type == "cuda" else None
    return {
        "step_ms": 1000 * elapsed / steps,
        "tokens_per_second": tokens_per_second,
        "tflops": flops * tokens_per_second / 1e12,
        "warm_up_s": warm_up,
        "peak_gib": peak_gib,
        "parameters": sum(p.numel() for p in training.network.parameters()),
        "loss": training.forward().item(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--grid", action="store_true", help="the fp32/bf16 grid instead of --models and --modes")
    args = parser.parse_args()
    models = GRID if args.grid else {name: MODELS[name] for name in args.models}
    modes = ["fp32", "bf16"] if args.grid else args.modes
    on_cuda = torch.device(args.device).type == "cuda"
    if on_cuda:
        print(
            f"device: {torch.cuda.get_device_name(args.device)}, torch {torch.__version__}, CUDA {torch.version.cuda}"
        )
    side = 8192 if on_cuda else 1024
    peaks = {
        dtype: matmul_peak(side, 20 if on_cuda else 3, args.device, dtype) for dtype in (torch.float32, torch.bfloat16)
    }
    print(" ".join(f"{str(d).removeprefix('torch.')} matmul peak {p / 1e12:.1f} TFLOP/s;" for d, p in peaks.items()))
    print(
        f"{'model':<12}{'mode':<14}{'params':>10}{'step ms':>9}{'tokens/s':>13}{'TFLOP/s':>9}{'MFU':>7}"
        f"{'warm-up s':>11}{'peak GiB':>10}{'loss':>8}"
    )
    for name, model in models.items():
        for mode in modes:
            figures = measure(model, mode, args.steps, args.device)
            peak = peaks[torch.bfloat16 if MODES[mode][0] else torch.float32]
            memory = "" if figures["peak_gib"] is None else f"{figures['peak_gib']:.2f}"
            print(
                f"{name:<12}{mode:<14}{figures['parameters']:>10,}{figures['step_ms']:>9.2f}"
                f"{figures['tokens_per_second']:>13,.0f}{figures['tflops']:>9.1f}"
                f"{100 * figures['tflops'] * 1e12 / peak:>6.1f}%{figures['warm_up_s']:>11.1f}{memory:>10}"
                f"{figures['loss']:>8.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
