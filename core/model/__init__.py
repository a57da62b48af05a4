"""The paper's model (§3): config, masks, attention, the layers around it, the Transformer."""
