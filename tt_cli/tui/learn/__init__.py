"""`tt learn`: the notes' lesson, step by step, on the live model."""
