"""Runs `sequifier train` in this process and interrupts it for real at a chosen point (a test helper).

    python interrupted_train.py MODE N [train arguments ...]

MODE: kill-after-batch (SIGKILL itself after the run's N-th batch), kill-in-checkpoint (SIGKILL while
the N-th checkpoint file is half written), sigterm-after-batch (SIGTERM itself once after batch N),
sigterm-twice (SIGTERM twice after batch N), sigint-after-batch (SIGINT, as Ctrl-C sends, once after batch N),
sigterm-ending-epoch (SIGTERM once after the last batch of epoch N), sigterm-in-export (SIGTERM as the models'
export begins; N unused).
"""

from __future__ import annotations

import os
import signal
import sys

import sequifier.training.checkpoint as checkpoint_module
import sequifier.training.engine as engine_module
from sequifier import cli
from sequifier.training.engine import Trainer


def main() -> int:
    mode, n, arguments = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    after_batch = Trainer._after_batch

    def interrupt_after(self, phase, ends_epoch):
        after_batch(self, phase, ends_epoch)
        if mode == "sigterm-ending-epoch":
            if ends_epoch and self.progress.global_epoch == n:
                os.kill(os.getpid(), signal.SIGTERM)
        elif self.progress.global_batch == n and mode not in ("kill-in-checkpoint", "sigterm-in-export"):
            if mode == "kill-after-batch":
                os.kill(os.getpid(), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGINT if mode == "sigint-after-batch" else signal.SIGTERM)
            if mode == "sigterm-twice":
                os.kill(os.getpid(), signal.SIGTERM)

    writes = 0
    save = checkpoint_module.torch.save

    def half_written(payload, path):
        nonlocal writes
        writes += 1
        save(payload, path)
        if writes == n and mode == "kill-in-checkpoint":
            data = open(path, "rb").read()
            with open(path, "wb") as file:
                file.write(data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)

    export_run = engine_module.export_run

    def export_after_a_signal(*arguments):
        if mode == "sigterm-in-export":
            os.kill(os.getpid(), signal.SIGTERM)
        return export_run(*arguments)

    Trainer._after_batch = interrupt_after
    engine_module.export_run = export_after_a_signal
    checkpoint_module.torch.save = half_written
    return cli.main(["train", *arguments])


if __name__ == "__main__":
    sys.exit(main())
