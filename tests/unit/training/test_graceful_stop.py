"""The first stop signal asks for a graceful stop and says what it does; the second one is left to stop at once."""

from __future__ import annotations

import os
import signal

import pytest

from sequifier.training.stop import GracefulStop


@pytest.mark.parametrize("hangup_as", [signal.SIG_DFL], indirect=True)
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_the_first_signal_requests_a_stop_says_so_and_leaves_the_second_to_the_default_action(number, hangup_as, capfd):
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


@pytest.mark.parametrize("hangup_as", [signal.SIG_IGN], indirect=True)
def test_a_run_started_with_hangups_ignored_goes_on_after_one(hangup_as):
    with GracefulStop() as stop:
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGHUP)
    assert stop.requested is None


def test_sigusr2_to_a_run_that_is_no_spawned_rank_is_named_and_never_stops_at_once(capfd):
    with GracefulStop() as stop:
        os.kill(os.getpid(), signal.SIGUSR2)
        os.kill(os.getpid(), signal.SIGUSR2)
        assert stop.requested == "SIGUSR2"
        assert signal.getsignal(signal.SIGUSR2) not in (signal.SIG_DFL, signal.SIG_IGN)
    said = capfd.readouterr().err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("SIGUSR2: stopping after the current optimizer step")
