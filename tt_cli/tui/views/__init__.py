"""Views of the model's insides that `tt inspect` opens on the sentence (key v) and `tt learn` points to."""
