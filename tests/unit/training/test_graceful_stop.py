"""The first stop signal asks for a graceful stop and says what it does; the second one is left to stop at once."""

from __future__ import annotations

import os
import signal

import pytest

from sequifier.training.stop import GracefulStop


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_the_first_signal_requests_a_stop_says_so_and_leaves_the_second_to_the_default_action(number, capfd):
    before = signal.getsignal(number)
    with GracefulStop() as stop:
        os.kill(os.getpid(), number)
        assert stop.requested == signal.Signals(number).name
        assert signal.getsignal(number) is signal.SIG_DFL
    assert signal.getsignal(number) is before
    said = capfd.readouterr().err.strip()
    assert said == (
        f"{signal.Signals(number).name}: stopping after the current optimizer step, once the latest checkpoint is "
        "written; a second signal stops at once, without it"
    )


def test_ranks_other_than_the_first_request_the_stop_silently(capfd):
    with GracefulStop(announce=False) as stop:
        os.kill(os.getpid(), signal.SIGTERM)
    assert stop.requested == "SIGTERM" and capfd.readouterr().err == ""
