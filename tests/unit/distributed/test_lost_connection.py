"""A rank under torchrun whose peer ended names the lost connection, also when torchrun's SIGTERM to the ranks
left arrives while the collective's error unwinds (torchrun sends it as soon as it sees a rank end)."""

from __future__ import annotations

import signal
from types import SimpleNamespace

import pytest

from sequifier.config.errors import OutsideFailure
from sequifier.deferred_signals import stopping_signals
from sequifier.distributed import launch
from sequifier.fast_exit import Terminated

# what gloo raises in a rank whose peer was killed
GLOO_READ_ERROR = (
    "[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:538] Read error [127.0.0.1]:7902: Connection reset by peer"
)
SPEC = SimpleNamespace(config=SimpleNamespace(global_training=SimpleNamespace(world_size=2)))


def raise_terminated(number: int, frame: object) -> None:
    """What a SIGTERM does in a `sequifier` command once training's own handlers are gone."""
    raise Terminated(number)


@pytest.fixture(autouse=True)
def rank_0_under_torchrun(monkeypatch: pytest.MonkeyPatch):
    for name, value in {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    handlers = {number: signal.getsignal(number) for number in stopping_signals()}
    signal.signal(signal.SIGTERM, raise_terminated)
    yield
    for number, handler in handlers.items():
        signal.signal(number, handler)


def training(collective_fails: bool, sigterm_while_unwinding: bool):
    def trained(*_: object) -> None:
        try:
            if collective_fails:
                raise RuntimeError(GLOO_READ_ERROR)
        finally:
            if sigterm_while_unwinding:
                signal.raise_signal(signal.SIGTERM)

    return trained


@pytest.mark.parametrize("sigterm_while_unwinding", [True, False])
def test_the_lost_connection_is_named_and_later_stops_do_not_hide_it(
    sigterm_while_unwinding: bool, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(launch, "_train_as", training(True, sigterm_while_unwinding))
    with pytest.raises(OutsideFailure) as failed:
        launch._attached(SPEC)
    assert failed.value.where == "global_training.distributed"
    assert failed.value.problem.startswith(
        "rank 0 lost its connection to the other processes of the run: one of them ended or was killed "
        "(Read error [127.0.0.1]:7902: Connection reset by peer)"
    )
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN  # torchrun's SIGTERM while it is said


def test_a_stop_without_a_lost_connection_stays_a_stop(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(launch, "_train_as", training(False, True))
    with pytest.raises(Terminated):
        launch._attached(SPEC)
    assert signal.getsignal(signal.SIGTERM) is raise_terminated
