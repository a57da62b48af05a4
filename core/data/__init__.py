"""Text in: the SentencePiece tokenizer, corpus readers, held-out splits, downloads, training examples."""
