"""Ingestion modules: turn an interface's input columns into one vector per time step."""
