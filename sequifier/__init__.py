"""sequifier: train transformer models on tabular event sequences."""

__version__ = "0.1.0"
