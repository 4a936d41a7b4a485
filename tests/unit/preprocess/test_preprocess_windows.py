"""Window placement rules inferred from the reference-v3 fixture and from sequifier 3.x runs."""

from __future__ import annotations

import numpy as np
import pytest

from sequifier.preprocess.windows import window_offsets


@pytest.mark.parametrize(
    "length, window, stride, expected",
    [
        (28, 17, 17, [0, 11]),  # one stride window, then the rest covered by spreading
        (45, 17, 17, [0, 14, 28]),
        (36, 17, 17, [0, 9, 19]),  # 19 / 2 = 9.5 rounds down
        (42, 17, 17, [0, 12, 25]),
        (34, 17, 17, [0, 17]),
        (17, 17, 17, [0]),
        (3, 17, 17, [-14]),  # short part: one window, 14 padding slots
        (0, 17, 17, []),
        # 3.x (numpy.linspace(0, 126, 27) truncated): 13 * (126 / 26) is 62.99999999999999 in float64, so 62, not 63
        (
            129,
            3,
            5,
            [
                0,
                4,
                9,
                14,
                19,
                24,
                29,
                33,
                38,
                43,
                48,
                53,
                58,
                62,
                67,
                72,
                77,
                82,
                87,
                92,
                96,
                101,
                106,
                111,
                116,
                121,
                126,
            ],
        ),
    ],
)
def test_offsets(length, window, stride, expected):
    _, _, offsets = window_offsets(np.array([length]), window, stride)
    assert offsets.tolist() == expected


def test_offsets_cover_each_part_with_gaps_at_most_stride():
    rng = np.random.default_rng(3)
    for _ in range(200):
        window, stride = int(rng.integers(1, 20)), int(rng.integers(1, 25))
        lengths = rng.integers(window + 1, 120, size=5)
        part, index, offsets = window_offsets(lengths, window, stride)
        for p, length in enumerate(lengths):
            starts = offsets[part == p]
            assert index[part == p].tolist() == list(range(starts.size))
            assert starts[0] == 0 and starts[-1] == length - window
            assert np.all(np.diff(starts) >= 1) and np.all(np.diff(starts) <= stride)
            assert starts.size == -(-(length - window) // stride) + 1
