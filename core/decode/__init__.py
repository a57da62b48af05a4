"""Inference: text to encoder ids (source), greedy / beam / sampling search, the translate API, the Stepper."""
