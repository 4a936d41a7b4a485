"""Dispatches a resolved run to the processes that train it.

- `distributed: false`: trained in this process.
- `distributed: true` under torchrun (RANK, WORLD_SIZE and LOCAL_RANK set): this process attaches to the
  group torchrun set up; the environment's WORLD_SIZE wins over `global_training.world_size`.
- `distributed: true` in a Submitit job of several tasks: each task exports its rank from the job environment
  (distributed/submitit_task.py) and attaches as under torchrun; the job's number of tasks wins.
- `distributed: true` otherwise: `world_size` workers spawned on this node (torch.multiprocessing.spawn,
  127.0.0.1 and a free port), each with its own device and cores / world_size threads.
A worker that fails makes the whole job fail, naming the rank and its error.
"""

from __future__ import annotations

import logging
import multiprocessing.connection
import os
import signal
import socket
import sys
from dataclasses import replace
from datetime import timedelta
from multiprocessing import resource_tracker
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from sequifier.config.errors import OutsideFailure, UserError, file_system_error
from sequifier.config.resolve import RunSpec
from sequifier.deferred_signals import stopping_signals
from sequifier.distributed.environment import (
    log_errors_only_off_rank_0,
    this_rank,
    torchrun_number,
    under_torchrun,
)
from sequifier.distributed.ranks import Ranks
from sequifier.distributed.rendezvous import check_address_set, join_group
from sequifier.distributed.sharding import check_shares
from sequifier.distributed.submitit_task import in_submitit_job, join_job_tasks
from sequifier.fast_exit import Terminated, found_behind, leave
from sequifier.standard_streams import keep_streams_writable
from sequifier.training.engine import train
from sequifier.training.result import TrainResult
from sequifier.training.stop import FORWARDED, StopRequested, remember_stops_until_training

logger = logging.getLogger("sequifier")
# A peer that died ends the others' collectives at once; this bounds waits on live peers (rank 0's export).
COLLECTIVE_TIMEOUT = timedelta(minutes=30)
HELD_WHILE_STARTING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, FORWARDED}


def launch(spec: RunSpec) -> TrainResult:
    """Train `spec`; every launcher enters training through here with the same plain spec."""
    join_job_tasks(spec.config.global_training.distributed)
    attached = under_torchrun()
    if not spec.config.global_training.distributed:
        if attached and torchrun_number("WORLD_SIZE") > 1:
            raise UserError(
                "global_training.distributed",
                f"is false, but torchrun started {os.environ['WORLD_SIZE']} processes that would each train the "
                "whole run and overwrite each other's files; set global_training.distributed=true",
            )
        return train(spec)
    if attached:
        return _attached(spec)
    return _spawned(spec)


def _with_world_size(spec: RunSpec, world_size: int) -> RunSpec:
    training = replace(spec.config.global_training, world_size=world_size)
    return replace(spec, config=replace(spec.config, global_training=training))


def _attached(spec: RunSpec) -> TrainResult:
    check_address_set()
    log_errors_only_off_rank_0(this_rank())
    world_size = torchrun_number("WORLD_SIZE")
    configured = spec.config.global_training.world_size
    if world_size != configured:
        starter = "the Submitit job" if in_submitit_job() else "torchrun"
        runs = "1 process" if world_size == 1 else f"{world_size} processes"
        logger.info("%s runs %s; global_training.world_size %d is ignored", starter, runs, configured)
        spec = _with_world_size(spec, world_size)
    ranks = Ranks(this_rank(), world_size, torchrun_number("LOCAL_RANK"))
    local_world = torchrun_number("LOCAL_WORLD_SIZE") if "LOCAL_WORLD_SIZE" in os.environ else world_size
    try:
        return _train_as(spec, ranks, local_world)
    except (RuntimeError, Terminated) as error:
        # torchrun sends SIGTERM to the ranks left as soon as it sees one end: it may arrive while the error unwinds
        lost = found_behind(error, _collective_failure)
        if lost is None:
            raise
        for number in stopping_signals():  # a stop signal while this rank reports the cause would hide it
            signal.signal(number, signal.SIG_IGN)
        said = " ".join(str(lost).split())
        raise OutsideFailure(
            "global_training.distributed",
            f"rank {ranks.rank} lost its connection to the other processes of the run: one of them ended or was killed "
            f"({(said.partition('] ')[2] or said).split('. ')[0][:200]}); its own output says why, and "
            "global_training.resume.policy=if_exists continues from the latest checkpoint",
        ) from None


def _collective_failure(error: BaseException) -> bool:
    return isinstance(error, RuntimeError) and (isinstance(error, dist.DistError) or "/gloo/" in str(error))


def _train_as(spec: RunSpec, ranks: Ranks, local_world: int) -> TrainResult:
    """Join the group as `ranks` (address and port in the environment), train, and leave it. A rank whose training
    failed leaves the group to the end of its process: destroying it could wait on collectives that the other ranks
    never complete, as gloo cannot abort them."""
    training = spec.config.global_training
    cuda = spec.config.device.startswith("cuda")
    if cuda:
        torch.cuda.set_device(ranks.local_rank)
        ranks = replace(ranks, collective_device=f"cuda:{ranks.local_rank}")
    torch.set_num_threads(training.num_threads or max(1, (os.cpu_count() or 1) // local_world))
    device = torch.device(ranks.collective_device) if cuda else None
    join_group(training.backend, ranks.rank, ranks.world_size, COLLECTIVE_TIMEOUT, device)
    result = train(spec, ranks)
    if not in_submitit_job():  # Submitit tasks end through Submitit, which may requeue them at any time
        dist.barrier()  # while rank 0 exports; a rank leaving the group early can abort the others' connections
    dist.destroy_process_group()
    return result


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _spawned(spec: RunSpec) -> TrainResult:
    world_size = spec.config.global_training.world_size
    check_shares(spec, world_size)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())
    _start_resource_tracker_deaf_to_user_signals()
    outcomes = mp.get_context("spawn").SimpleQueue()
    logger.info(
        "starting %s on this node", "1 training process" if world_size == 1 else f"{world_size} training processes"
    )
    try:
        with _StopsForwarded() as stops:
            ranks = _started_with_stops_held(world_size, spec, outcomes)
            try:
                stops.watch(ranks.processes)
                _supervise(ranks, stops)
            finally:
                _remove_error_files(ranks)
    except mp.ProcessExitedException as ended:
        _raise_reported(_drain(outcomes))
        stops.raise_if_stopped_at_once()
        raise OutsideFailure(
            "global_training.distributed", f"training process of rank {ended.error_index} {_how(ended)}"
        ) from None
    except mp.ProcessRaisedException as raised:
        _raise_reported(_drain(outcomes))
        last = [line for line in str(raised).strip().splitlines() if line.strip()][-1]
        raise RuntimeError(f"training process of rank {raised.error_index} failed: {last}\n{raised}") from None
    return _first_result(outcomes)


def _started_with_stops_held(world_size: int, spec: RunSpec, outcomes) -> mp.ProcessContext:
    """The spawned ranks, started with the stop signals blocked, which they inherit: a signal sent while a rank
    imports and unpickles (Ctrl-C to the group, FORWARDED from this process) waits until `_worker` keeps it for
    training, instead of killing the rank or printing its traceback. The parent's handlers are already in place."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_WHILE_STARTING)
    try:
        return mp.start_processes(
            _worker, args=(spec, world_size, outcomes), nprocs=world_size, join=False, start_method="spawn"
        )
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _supervise(ranks: mp.ProcessContext, stops: _StopsForwarded) -> None:
    """Wait for the ranks, forwarding stops. Once one fails, the others are killed at once: they wait in collectives
    that cannot complete without it (torch would send them SIGTERM, which a rank takes as a graceful stop, and wait
    30 s)."""
    while True:
        codes = [process.exitcode for process in ranks.processes]  # one reading: a rank may end meanwhile
        failed = [index for index, code in enumerate(codes) if code not in (None, 0)]
        if failed or None not in codes:
            break
        live = [process.sentinel for process, code in zip(ranks.processes, codes) if code is None]
        multiprocessing.connection.wait(live)
    if failed:
        for index, process in enumerate(ranks.processes):
            if index != failed[0]:
                process.kill()
                process.join()
                ranks.sentinels.pop(process.sentinel, None)  # so that the join below names the rank that failed
    ranks.join()  # raises for a failed rank as torch does, with its error


def _start_resource_tracker_deaf_to_user_signals() -> None:
    """multiprocessing's resource tracker ignores SIGINT and SIGTERM only: SIGUSR1, SIGUSR2 or SIGHUP sent to the
    process group (Slurm's --signal reaches every process of a step, a closed terminal every process of its session)
    would kill it and print its tracebacks. Dispositions set to ignore are inherited by the processes it starts; a
    stop signal in this moment, before any rank exists, is lost."""
    user_signals = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP)
    previous = {number: signal.signal(number, signal.SIG_IGN) for number in user_signals}
    try:
        resource_tracker.ensure_running()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _remove_error_files(ranks: mp.ProcessContext) -> None:
    """The files torch's spawn has a rank write its escaping exception to, which it reads but leaves behind."""
    for name in ranks.error_files:
        if name:
            Path(name).unlink(missing_ok=True)


class _StopsForwarded:
    """While the spawned ranks run, a stop signal to this process reaches them as their graceful stop.

    The first stopping signal (deferred_signals.py), SIGUSR1 or FORWARDED (SIGUSR2) is forwarded as FORWARDED,
    which a rank that got the signal too ignores; a second one but FORWARDED as SIGKILL, which stops the ranks at
    once. Signals that arrive before the ranks exist are forwarded once they do
    (`watch`). Inside a Submitit job Submitit handles them.
    """

    def __init__(self) -> None:
        self.processes: list = []
        self.received = 0
        self.last: int | None = None
        self._previous: dict[int, object] = {}

    def watch(self, processes: list) -> None:
        self.processes = processes
        if self.received:
            self._send(FORWARDED if self.received == 1 else signal.SIGTERM)

    def __enter__(self) -> "_StopsForwarded":
        if not in_submitit_job():
            forwarded = (*stopping_signals(), signal.SIGUSR1, FORWARDED)
            self._previous = {number: signal.signal(number, self._forward) for number in forwarded}
        return self

    def _forward(self, number: int, frame: object) -> None:
        if number == FORWARDED and self.received:  # SIGUSR2 asks for the graceful stop only, never for one at once
            return
        self.received, self.last = self.received + 1, number
        if self.received == 1:
            logger.info(
                "%s: the training processes stop gracefully (after their step and latest.pt, or after the export once "
                "training is complete)",
                signal.Signals(number).name,
            )
        self._send(FORWARDED if self.received == 1 else signal.SIGKILL)

    def raise_if_stopped_at_once(self) -> None:
        """After a second signal ended the ranks: this process ends as that signal ends a command (130 / 143 / 129)."""
        if self.received >= 2:
            raise KeyboardInterrupt if self.last == signal.SIGINT else Terminated(self.last)

    def _send(self, number: int) -> None:
        for process in self.processes:
            if process.is_alive():  # a rank that ended is reaped here, so its pid is not another process's
                try:
                    os.kill(process.pid, number)
                except ProcessLookupError:
                    pass

    def __exit__(self, *exc: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)


def _how(ended: mp.ProcessExitedException) -> str:
    if ended.signal_name:
        return f"was killed by {ended.signal_name}; the other processes were stopped"
    return f"exited with code {ended.exit_code}; the other processes were stopped"


def _worker(index: int, spec: RunSpec, world_size: int, outcomes) -> None:
    """One spawned rank. Outcomes the parent turns into its own: the result, a clean error, a requested stop.

    A rank that ends on its own leaves without the interpreter's teardown, as the `sequifier` command does:
    there, a backend thread of torch.distributed that still wakes up can abort the finished rank (SIGABRT).
    """
    remember_stops_until_training(HELD_WHILE_STARTING)  # a signal to this rank alone is not lost meanwhile
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_WHILE_STARTING)
    keep_streams_writable()
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr, force=True)
    log_errors_only_off_rank_0(index)
    try:
        result = _train_as(spec, Ranks(index, world_size, index), world_size)
    except (UserError, OSError) as error:
        problem = error if isinstance(error, UserError) else file_system_error(error)
        outcomes.put(("error", index, problem.where, problem.problem))
        leave(problem.exit_code)
    except StopRequested as stopped:
        outcomes.put(("stopped", index, str(stopped)))
        leave(0)
    if index == 0:
        outcomes.put(("result", result))
    leave(0)


def _drain(outcomes) -> list[tuple]:
    found = []
    while not outcomes.empty():
        found.append(outcomes.get())
    return found


def _raise_reported(found: list[tuple]) -> None:
    """A clean error a rank reported, as this process's own."""
    for outcome in found:
        if outcome[0] == "error":
            _, rank, where, problem = outcome
            raise UserError(where, f"{problem} (rank {rank})")


def _first_result(outcomes) -> TrainResult:
    found = _drain(outcomes)
    _raise_reported(found)
    for outcome in found:
        if outcome[0] == "stopped":
            raise StopRequested(outcome[2])
    results = [outcome[1] for outcome in found if outcome[0] == "result"]
    if not results:
        raise UserError("global_training.distributed", "rank 0 ended without a result")
    return results[0]
