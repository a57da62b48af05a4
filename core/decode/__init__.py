"""Inference: greedy / beam / sampling search, the translate API, the step-by-step Stepper."""
