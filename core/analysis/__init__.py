"""What the model did at each step (traces), and the analyses that read it: explain, beam steps, ..."""
