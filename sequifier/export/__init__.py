"""Exporting trained networks: ONNX files and PT inference bundles, each carrying its execution contract."""
