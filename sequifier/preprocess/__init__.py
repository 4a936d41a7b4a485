"""Preprocess stage: raw event table -> stored windows per split + dataset metadata."""

from sequifier.preprocess.run import run_preprocess

__all__ = ["run_preprocess"]
