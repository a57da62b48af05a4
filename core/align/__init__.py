"""Word alignment from the model's cross-attention (links.py) and its scoring against gold links (aer.py)."""
