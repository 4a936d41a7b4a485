"""One module per command (make, preprocess, train, infer): each shows its command from arguments to artifacts."""
