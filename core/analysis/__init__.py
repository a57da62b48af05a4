"""The analyses that read what the model did: explain, beam steps, ablation, attribution, lens, sinks, ..."""
