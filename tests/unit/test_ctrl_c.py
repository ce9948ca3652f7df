"""Ctrl-C handling of long commands (kubectl_rollout/cli/interruptible.py): a second press is never lost,
whenever it comes after the first."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from kubectl_rollout.cli.interruptible import CtrlC, run_interruptibly


def _press_from_another_thread() -> threading.Thread:
    # As a terminal does: SIGINT to the process, whatever its main thread is doing at that moment.
    presser = threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT))
    presser.start()
    return presser


def test_the_first_press_interrupts_and_one_during_its_handling_counts_as_the_second() -> None:
    with CtrlC() as ctrl_c:
        ctrl_c.interrupt_next()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        # Pressed again while the first was being handled (before the window's wait began): not raised, counted.
        signal.raise_signal(signal.SIGINT)
        started = time.monotonic()
        assert ctrl_c.pressed_again(within=30)
        assert time.monotonic() - started < 5
        assert ctrl_c.presses == 2


def test_a_second_press_during_the_window_ends_the_wait_at_once() -> None:
    with CtrlC() as ctrl_c:
        ctrl_c.interrupt_next()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        # Before or after the wait begins, whichever the scheduler picks: both must count.
        presser = _press_from_another_thread()
        started = time.monotonic()
        assert ctrl_c.pressed_again(within=30)
        assert time.monotonic() - started < 5
        presser.join()


def test_no_second_press_closes_the_window() -> None:
    with CtrlC() as ctrl_c:
        ctrl_c.interrupt_next()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        assert not ctrl_c.pressed_again(within=0.05)


def test_after_interrupt_next_a_press_interrupts_again() -> None:
    with CtrlC() as ctrl_c:
        ctrl_c.interrupt_next()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        assert not ctrl_c.pressed_again(within=0)
        ctrl_c.interrupt_next()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)


def test_a_press_while_presses_only_count_interrupts_as_soon_as_they_may() -> None:
    with CtrlC() as ctrl_c:
        signal.raise_signal(signal.SIGINT)  # before the job's wait began: counted, not raised
        with pytest.raises(KeyboardInterrupt):
            ctrl_c.interrupt_next()
        signal.raise_signal(signal.SIGINT)  # the second: counted, not raised
        assert ctrl_c.pressed_again(within=0)


def test_python_s_handler_is_back_afterwards() -> None:
    before = signal.getsignal(signal.SIGINT)
    with CtrlC():
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before


def test_an_in_process_job_is_cancelled_once_and_a_second_press_escapes_nowhere() -> None:
    cancel = threading.Event()
    both_sent = threading.Event()

    def press_twice() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        both_sent.set()

    def work() -> str:
        # Pressed once the job runs (the handler is in place by then); it ends only once cancelled and both
        # presses were sent, so that neither can land after the handler is gone.
        threading.Thread(target=press_twice).start()
        assert cancel.wait(30)
        assert both_sent.wait(30)
        return "stopped"

    assert run_interruptibly(work, cancel, on_interrupt="cancelling", name="test job") == "stopped"
    assert cancel.is_set()
