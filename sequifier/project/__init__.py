"""Project scaffolding (`sequifier make`) and the synthetic demo data set."""
