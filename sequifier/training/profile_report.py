"""The report of `sequifier train --profile`: profile.json in the run's log folders and the table rank 0 prints."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sequifier.atomic import write_text_atomic
from sequifier.training.profile import (
    OPTIMIZER,
    OTHER,
    PROFILE,
    STEP_PARTS,
    PhaseRecorder,
    resident_mib,
    seconds_since_process_start,
)

PROFILE_FILE = "profile.json"


def peak_rss_mib() -> float | None:
    """The peak resident set size of this process so far, in MiB.

    Linux's VmHWM belongs to this process alone; getrusage's ru_maxrss (elsewhere) may start from the resident
    set of the parent that forked it.
    """
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 2**10
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def profile_of(recorder: PhaseRecorder, now: float) -> dict:
    """The profile up to `now` (the recorder's clock): phases summing to the total, step parts, memory."""
    age = seconds_since_process_start()
    started = recorder.clock() - age if age is not None else None
    seconds = dict(recorder.seconds)
    seconds["start-up"] = recorder.command_started - started if started is not None else None
    total = now - (started if started is not None else recorder.command_started)
    seconds[OTHER] = total - sum(value for value in seconds.values() if value is not None)
    phases = [
        {
            "name": name,
            "seconds": value,
            "share": value / total if value is not None and total > 0 else None,
            "rss_mib_at_end": recorder.rss_at_end.get(name),
        }
        for name, value in seconds.items()
    ]
    parts = [
        {
            "name": part,
            "per": "optimizer step" if part == OPTIMIZER else "microbatch",
            "count": recorder.step_counts[part],
            "seconds": recorder.step_seconds[part],
            "mean_ms": 1000 * recorder.step_seconds[part] / recorder.step_counts[part]
            if recorder.step_counts[part]
            else None,
        }
        for part in STEP_PARTS
    ]
    rss_now = resident_mib()
    samples = [peak_rss_mib(), rss_now, *recorder.rss_at_end.values()]
    return {
        "total_seconds": total,
        "measured_from": "process start" if started is not None else "command start (process start unknown)",
        "phases": phases,
        "step_parts": parts,
        "cuda_synchronized": recorder.synchronized,
        "rss_mib_now": rss_now,
        "peak_rss_mib": max((sample for sample in samples if sample is not None), default=None),
    }


def _number(value: float | None, pattern: str) -> str:
    return "unknown" if value is None else format(value, pattern)


def profile_table(profile: dict) -> str:
    """The profile as a compact table, ready to print."""
    lines = [
        f"\nprofile: {profile['total_seconds']:.2f} s from {profile['measured_from']}, "
        f"peak RSS {_number(profile['peak_rss_mib'], '.0f')} MiB",
        f"  {'phase':<16}{'seconds':>9}{'share':>8}{'RSS at end MiB':>16}",
    ]
    for phase in profile["phases"]:
        share = _number(None if phase["share"] is None else 100 * phase["share"], ".1f")
        rss = "" if phase["rss_mib_at_end"] is None else f"{phase['rss_mib_at_end']:.0f}"
        lines.append(f"  {phase['name']:<16}{_number(phase['seconds'], '.2f'):>9}{share + '%':>8}{rss:>16}")
    synchronized = ", CUDA synchronized after each part" if profile["cuda_synchronized"] else ""
    lines.append(f"  {'step part':<16}{'count':>9}{'total s':>9}{'mean ms':>9}  per{synchronized}")
    for part in profile["step_parts"]:
        lines.append(
            f"  {part['name']:<16}{part['count']:>9}{part['seconds']:>9.2f}"
            f"{_number(part['mean_ms'], '.1f'):>9}  {part['per']}"
        )
    return "\n".join(lines)


def report_profile(folders: tuple[str, ...]) -> None:
    """With --profile: write profile.json into each log folder of the run and print the table (rank 0 has folders)."""
    if not PROFILE.enabled or not folders:
        return
    profile = profile_of(PROFILE, PROFILE.clock())
    for folder in folders:
        write_text_atomic(Path(folder) / PROFILE_FILE, json.dumps(profile, indent=2) + "\n")
    print(profile_table(profile), flush=True)
