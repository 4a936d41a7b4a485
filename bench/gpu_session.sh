#!/usr/bin/env bash
# The checks of one lent-GPU session (docs/performance.md, "On a GPU"), each a step of a few minutes at most:
#     bash bench/gpu_session.sh OUT_FOLDER [profile throughput grid modes infer]   (default: all five)
# Run from the repository root under a python3 that has torch with CUDA; the project's other dependencies
# are installed from wheels in .whl/ when that folder exists (the GPU machine has no package registry).
#   profile     `sequifier train --profile` of the seed-shaped model on 40,000 pt windows, device=cuda
#   throughput  bench/gpu_throughput.py: tokens/s and MFU of the seed-shaped and a larger model
#   grid        bench/gpu_throughput.py --grid: where bf16 autocast starts to pay
#   modes       bench/train_modes.py on 20,000 windows, 2 epochs: whole-process runs in precision, compile
#               and gathering-ahead modes
#   infer       bench/infer_throughput.py with the PT bundle on the GPU (ONNX on the CPU)
# Each step's output goes to OUT_FOLDER/<step>.txt. DEVICE=cpu runs the steps, smaller, on the CPU (a rehearsal
# before spending device time); PYTHON names another interpreter.
set -u
out=${1:?usage: bash bench/gpu_session.sh OUT_FOLDER [STEP ...]}
shift
steps=${*:-profile throughput grid modes infer}
device=${DEVICE:-cuda}
python=${PYTHON:-python3}
mkdir -p "$out"
if [ -d .whl ]; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || exit 1
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
printf '#!/bin/sh\nexec %s -m sequifier "$@"\n' "$python" > /tmp/sequifier-command && chmod +x /tmp/sequifier-command
export SEQUIFIER_COMMAND=/tmp/sequifier-command
if [ "$device" = cuda ]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee "$out/gpu.txt"
    windows=40000 mode_windows=20000 steps_per_model=50 infer_windows=20000
else
    windows=2000 mode_windows=1000 steps_per_model=2 infer_windows=500
fi
cd bench || exit 1
for step in $steps; do
    case $step in
        profile) timeout 200 "$python" train_profile.py --windows $windows --epochs 1 --workdir /tmp/gpu-session-train \
            --override device="$device" ;;
        throughput) timeout 270 "$python" gpu_throughput.py --device "$device" --steps $steps_per_model ;;
        grid) timeout 150 "$python" gpu_throughput.py --device "$device" --grid --steps $((steps_per_model / 2)) ;;
        modes) timeout 300 "$python" train_modes.py --windows $mode_windows --epochs 2 --repeats 1 --dropout 0.1 \
            --modes auto loop eager bf16-outer --override device="$device" ;;
        infer) timeout 100 "$python" infer_throughput.py --windows $infer_windows --batch-size 256 --repeats 2 \
            --pt-device "$device" ;;
        *) echo "unknown step $step (profile, throughput, grid, modes, infer)"; exit 2 ;;
    esac 2>&1 | tee "$out/$step.txt"
done
