"""Stopping signals wait for a step that must not be cut, and a hangup stops a command as SIGTERM does unless the
command was started with hangups ignored."""

from __future__ import annotations

import os
import signal

import pytest

from sequifier.deferred_signals import signals_deferred, stopping_signals
from sequifier.preprocess.signals import signals_as_exit


@pytest.mark.parametrize("hangup_as", [signal.SIG_DFL], indirect=True)
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_a_deferred_step_acts_once_the_step_is_done(number, hangup_as):
    arrived = []
    before = signal.signal(number, lambda signum, frame: arrived.append(signum))
    try:
        with signals_deferred():
            os.kill(os.getpid(), number)
            assert arrived == []  # the step goes on
        assert arrived == [number]
    finally:
        signal.signal(number, before)


@pytest.mark.parametrize("hangup_as", [signal.SIG_DFL], indirect=True)
def test_a_hangup_ends_preprocess_as_its_signal_does(hangup_as):
    with pytest.raises(SystemExit) as ended, signals_as_exit():
        os.kill(os.getpid(), signal.SIGHUP)
    assert ended.value.code == 128 + signal.SIGHUP
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


@pytest.mark.parametrize("hangup_as", [signal.SIG_IGN], indirect=True)
def test_hangups_ignored_when_the_command_started_stay_ignored(hangup_as):
    assert signal.SIGHUP not in stopping_signals()
    with signals_as_exit(), signals_deferred():
        os.kill(os.getpid(), signal.SIGHUP)
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
