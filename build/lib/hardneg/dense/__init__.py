"""Dense retrieval: tokenizer, tokenized cache, bi-encoder model, training, encoding and search."""
