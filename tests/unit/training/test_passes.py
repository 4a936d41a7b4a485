"""A microbatch trained in passes of its rows gives the gradients, losses and counts of one pass over all of it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.config.schema import GlobalTrainingConfig
from sequifier.training.engine import Trainer
from sequifier.training.evaluation import Totals
from sequifier.training.passes import (
    CPU_TOKENS_PER_PASS,
    batch_passes,
    largest_pass_tokens,
    rows_per_pass,
    validation_rows,
)

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


def training(**fields) -> GlobalTrainingConfig:
    return GlobalTrainingConfig(context_length=128, **fields)


def test_rows_per_pass_fit_the_token_limit_with_at_least_one_row():
    assert rows_per_pass(64, 128, training(), CPU) == CPU_TOKENS_PER_PASS // 128
    assert rows_per_pass(64, 128, training(), CUDA) == 64
    assert rows_per_pass(64, 128, training(max_tokens_per_pass=1000), CPU) == 7
    assert rows_per_pass(64, 128, training(max_tokens_per_pass=10), CUDA) == 1
    assert rows_per_pass(5, 8, training(max_tokens_per_pass=10**6), CPU) == 5


def test_distributed_ranks_take_whole_batches_so_their_collectives_stay_in_step():
    assert rows_per_pass(64, 128, training(distributed=True, world_size=2), CPU) == 64


def test_validation_forwards_take_inference_batches_cut_to_the_pass_limit():
    assert validation_rows(training(inference_batch_size=256), 128, CPU) == CPU_TOKENS_PER_PASS // 128
    assert validation_rows(training(inference_batch_size=8), 128, CPU) == 8
    assert validation_rows(training(inference_batch_size=256), 128, CUDA) == 256


def test_the_largest_pass_counted_against_memory_is_a_cpu_runs_training_or_validation_pass():
    assert largest_pass_tokens(training(), CPU) == CPU_TOKENS_PER_PASS
    assert largest_pass_tokens(training(batch_size=4, inference_batch_size=8), CPU) == 8 * 128
    assert largest_pass_tokens(training(max_tokens_per_pass=300), CPU) == 2 * 128
    assert largest_pass_tokens(training(max_tokens_per_pass=1), CPU) == 128  # at least one row
    assert largest_pass_tokens(training(distributed=True, world_size=2, batch_size=64), CPU) == 256 * 128
    assert largest_pass_tokens(training(), CUDA) == 0  # an accelerator's activations are in its own memory


def trainer_with(reference_project: Path, tmp_path: Path, max_tokens_per_pass: int | None) -> Trainer:
    config = tiny_train_config()
    config["global_training"].update(max_tokens_per_pass=max_tokens_per_pass, optimizer={"name": "SGD"})
    config["model"]["backbone"]["architecture"]["dropout"] = 0.0
    spec = resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)
    return Trainer(spec)


def test_the_passes_of_a_batch_are_its_rows_in_order(reference_project: Path, tmp_path: Path):
    trainer = trainer_with(reference_project, tmp_path, None)
    part = next(iter(trainer.parts.values()))
    batch = part.training_batch(torch.arange(11))
    passes = batch_passes(batch, 4)
    assert [len(p.target_valid) for p in passes] == [4, 4, 3]
    for field in ("inputs", "targets", "persistence"):
        for name, whole in getattr(batch, field).items():
            assert torch.equal(torch.cat([getattr(p, field)[name] for p in passes]), whole), (field, name)
    assert torch.equal(torch.cat([p.target_valid for p in passes]), batch.target_valid)
    assert batch_passes(batch, 11) == [batch]


@pytest.mark.parametrize("rows_per_pass_", [1, 3])
def test_passes_add_up_to_the_gradient_and_totals_of_the_whole_microbatch(
    reference_project: Path, tmp_path: Path, rows_per_pass_: int
):
    whole = trainer_with(reference_project, tmp_path / "whole", 10**6)
    split = trainer_with(reference_project, tmp_path / "split", rows_per_pass_ * 8)  # context_length 8
    # the validation windows are left-padded: the passes must cut the padding lengths with the rows
    part = next(iter(whole.parts.values()))
    part = replace(part, train=part.validation)
    batch = part.training_batch(torch.arange(min(13, len(part.train))))
    assert batch.left_pad_lengths is not None and bool(batch.left_pad_lengths.any())

    seen_rows = []
    forward = split.runtime.forward
    split.runtime.forward = lambda interface, inputs, pad: seen_rows.append(len(pad)) or forward(interface, inputs, pad)
    whole_totals, split_totals = Totals(), Totals()
    whole.optimization.begin_phase(0)
    split.optimization.begin_phase(0)
    whole._microbatch(part, batch, whole_totals)
    split._microbatch(part, batch, split_totals)

    rows = len(batch.target_valid)
    assert seen_rows == [min(rows_per_pass_, rows - start) for start in range(0, rows, rows_per_pass_)]
    assert split_totals.count == whole_totals.count
    for name, value in whole_totals.loss.items():
        assert split_totals.loss[name] == pytest.approx(value, rel=1e-5)
    assert split.last_finite_loss == pytest.approx(whole.last_finite_loss, rel=1e-5)
    whole_grads = dict(whole.network.named_parameters())
    for name, parameter in split.network.named_parameters():
        if parameter.grad is None:
            assert whole_grads[name].grad is None, name
            continue
        assert torch.allclose(parameter.grad, whole_grads[name].grad, atol=1e-6, rtol=1e-4), name


def test_a_run_in_passes_ends_with_the_weights_and_validation_of_a_run_without(reference_project: Path, tmp_path: Path):
    states, results, validation_rows_seen = [], [], []
    for limit in (10**6, 16):
        trainer = trainer_with(reference_project, tmp_path / str(limit), limit)
        seen = []
        forward = trainer.network.forward
        trainer.network.forward = lambda interface, inputs, pad, seen=seen, forward=forward, network=trainer.network: (
            (seen.append(len(pad)) if not network.training else None) or forward(interface, inputs, pad)
        )
        results.append(trainer.run())
        states.append(trainer.network.state_dict())
        validation_rows_seen.append(max(seen))
    assert validation_rows_seen[0] > 2 and validation_rows_seen[1] == 2  # 16 tokens of context_length 8
    for name, value in states[0].items():
        assert torch.allclose(states[1][name], value, atol=1e-5), name
    assert results[0].final_validation.keys() == results[1].final_validation.keys()
    for target, loss in results[0].final_validation.items():
        assert results[1].final_validation[target] == pytest.approx(loss, rel=1e-4), target
    assert results[1].final_baseline == pytest.approx(results[0].final_baseline, rel=1e-6)
