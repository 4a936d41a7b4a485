"""`sequifier infer`: run exported models over preprocessed windows and write decoded predictions."""
