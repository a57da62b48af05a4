"""tt's command line and terminal UI: a thin shell that shows what `core` computes."""
