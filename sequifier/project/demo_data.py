"""A synthetic event data set with known structure: a Markov chain over events plus an event-dependent real value.

The chain's entropy rate is the lowest cross-entropy any model can reach when predicting
the next event, so it tells how close training gets to the achievable floor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sequifier.atomic import atomic_path

N_EVENTS = 24
SUCCESSORS = 4


@dataclass(frozen=True)
class MarkovChain:
    transitions: np.ndarray  # [n, n], rows sum to 1
    amount_means: np.ndarray  # [n]

    @property
    def stationary(self) -> np.ndarray:
        values, vectors = np.linalg.eig(self.transitions.T)
        vector = np.real(vectors[:, np.argmin(np.abs(values - 1.0))])
        return vector / vector.sum()

    @property
    def entropy_rate(self) -> float:
        """Expected next-event entropy in nats under the stationary distribution."""
        p = self.transitions
        row_entropy = -(p * np.log(p, where=p > 0, out=np.zeros_like(p))).sum(axis=1)
        return float(self.stationary @ row_entropy)


def make_chain(seed: int) -> MarkovChain:
    """Each event has a few likely successors and a small chance of any other."""
    rng = np.random.default_rng(seed)
    transitions = np.full((N_EVENTS, N_EVENTS), 0.02 / N_EVENTS)
    for event in range(N_EVENTS):
        successors = rng.choice(N_EVENTS, size=SUCCESSORS, replace=False)
        transitions[event, successors] += 0.98 * rng.dirichlet(np.full(SUCCESSORS, 1.0))
    transitions /= transitions.sum(axis=1, keepdims=True)
    return MarkovChain(transitions, rng.uniform(5.0, 50.0, size=N_EVENTS))


def sample_table(chain: MarkovChain, n_sequences: int, min_length: int, max_length: int, seed: int) -> pa.Table:
    """Sequences started from the stationary distribution; vectorized over sequences per step."""
    rng = np.random.default_rng(seed + 1)
    lengths = rng.integers(min_length, max_length + 1, size=n_sequences)
    longest = int(lengths.max())
    events = np.empty((n_sequences, longest), dtype=np.int64)
    events[:, 0] = rng.choice(N_EVENTS, size=n_sequences, p=chain.stationary)
    cumulative = np.cumsum(chain.transitions, axis=1)
    for step in range(1, longest):
        draws = rng.random(n_sequences)[:, None]
        events[:, step] = np.minimum((draws > cumulative[events[:, step - 1]]).sum(axis=1), N_EVENTS - 1)
    keep = np.arange(longest)[None, :] < lengths[:, None]
    sequence_ids = np.broadcast_to(np.arange(n_sequences)[:, None], events.shape)[keep]
    positions = np.broadcast_to(np.arange(longest)[None, :], events.shape)[keep]
    flat_events = events[keep]
    amounts = chain.amount_means[flat_events] + rng.normal(0.0, 3.0, size=flat_events.shape)
    names = np.array([f"e{i:02d}" for i in range(N_EVENTS)])
    return pa.table(
        {
            "sequenceId": pa.array(sequence_ids, pa.int64()),
            "itemPosition": pa.array(positions, pa.int64()),
            "event": pa.array(names[flat_events]),
            "amount": pa.array(amounts, pa.float64()),
        }
    )


def write_demo_data(
    path: Path, n_sequences: int = 200, min_length: int = 1000, max_length: int = 1400, seed: int = 7
) -> MarkovChain:
    chain = make_chain(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:
        pq.write_table(sample_table(chain, n_sequences, min_length, max_length, seed), temporary)
    return chain
