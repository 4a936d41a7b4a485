"""Hydra config groups shipped with sequifier, reachable as pkg://sequifier.conf."""
