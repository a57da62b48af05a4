"""Training (§5): the run's config, the Trainer loop, its checkpoints and exact resume."""
