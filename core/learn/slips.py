"""Where a note is wrong: each slip the lesson names, with what the note says, what is right, and why.

Every slip here was checked against the notes in ../shared/seeds (the section named in `note`), and
the corrected figure is computed by tt where it is a number (tests/core/learn pins each one).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Slip:
    """Where a note is wrong: what it says, what is right, and why."""

    note: str  # seed file and section
    says: str
    right: str
    why: str


D_K_IS_512 = Slip(
    "003 (Self-attention), 004",
    "d_k is the dimension of the embedding, 512; divide by √512",
    "d_k = d_model / h: 64 in the base model (512 / 8); the live numbers give this model's d_k",
    "each head's queries and keys have d_k components; the division matches the head's dot product",
)
MONEY_BANK = Slip(
    "001 (money/bank)",
    "10/√2 ≈ 7.09, 32/√2 ≈ 22.69, softmax = [0.2, 0.8]",
    "7.07 and 22.63; softmax ≈ [0.0000002, 1.0]",
    "scores 15.6 apart leave nothing to the smaller one; [0.2, 0.8] needs a gap of ln 4 = 1.39",
)
SIX_FOUR_OVER_ROOT_TWO = Slip(
    "000 (Scaling: with scaling)",
    "[6, 4] ⇒ scale ⇒ [6/√2, 4/√2] = [3, 2]",
    "d_k = 4, so the division is by √4 = 2: [6/2, 4/2] = [3, 2] (6/√2, 4/√2 would be [4.24, 2.83], "
    "softmax [0.80, 0.20])",
    "the note's own line above says √d_k = √4 = 2; its [3, 2] and softmax [0.73, 0.27] are right for ÷2",
)
ROOT_D_OVER_N = Slip(
    "002 (Multi-head self-attention)",
    "divide the attention scores by √(d/n)",
    "by √(d/h) = √d_k, the size of one head's queries and keys (n is the number of words)",
    "the variance of q·k grows with the number of components summed, d/h per head; the sentence's length "
    "does not enter one dot product",
)
EIGHT_TIMES_CHEAPER = Slip(
    "001 (Computational & memory efficiency)",
    "8 heads of 64 are 8× cheaper than one head of 512",
    "the same number of multiply-adds: h · T² · d_k = T² · d_model",
    "splitting divides the work per head, not the total (tt analyze claims counts it)",
)
EXTRAPOLATION = Slip(
    "001 (Sinusoidal) vs 002 (Position representations)",
    "001: 'works for sequences longer than those seen in training'; 002: 'extrapolation isn't possible'",
    "the formula is defined at any position, but a model trained on short sentences has never read the vectors "
    "of far positions",
    "both are half true: the table extrapolates, the trained model need not (tt's max_len caps it)",
)
PE_039 = Slip(
    "000 (Input embedding and positional encoding: CAT's box)",
    "PE(1) = [0.84 | 0.54 | 0.01 | 0.39]",
    "PE(1, 3) = cos(1 / 10000^{2/4}) = cos(0.01) = 0.99995 ≈ 1.00: PE(1) = [0.84, 0.54, 0.01, 1.00]",
    "the note's own line above writes cos ≈ 0.99995; 0.39 is not a cosine of any angle near 0",
)
SQUISHED_0_1 = Slip(
    "003 (Add and norm)",
    "normalisation squishes the values between 0 and 1",
    "x̂ has mean 0 and variance 1: values run below 0 and above 1 ([2, 4, 6, 8] → ±1.34)",
    "that is min-max scaling (001 shows it too); LayerNorm standardises",
)
UNIT_MEAN = Slip(
    "002 (Layer normalisation)",
    "normalising to unit mean & standard deviation",
    "zero mean and unit standard deviation: x̂ = (x − μ) / σ, then γ x̂ + β",
    "subtracting μ leaves a mean of 0, as the note's own formula for μ and σ does",
)
MASK_AFTER_SOFTMAX = Slip(
    "003 (Decoder)",
    "the masking is a manipulation done after the softmax",
    "the mask goes on the scores, before the softmax",
    "zeroing weights after the softmax leaves rows that no longer sum to 1, and the kept weights still depend on "
    "the future scores through the softmax's normaliser: the future leaks in",
)
MASK_SCORES = Slip(
    "000 (④ MASK)",
    "scores 1.9, 3.1, 5.1 'divided by 2'",
    "Q Kᵀ is 1.74, 2.78, 4.46, and the division was not done; the padded row is [⅓, ⅓, ⅓, 0]",
    "recomputed from the note's own inputs with tt's attention",
)
PADDING_ROWS = Slip(
    "000 (④ MASK: padding mask, combined mask)",
    "the padding mask's last row is [0, 0, 0, 0], yet the combined mask's last row is [1·1, 1·1, 1·1, 1·0] = "
    "[1, 1, 1, 0]",
    "the padding mask hides the padded key — a column: every row is [1, 1, 1, 0] (tt's padding_mask), and "
    "look-ahead × padding gives a last row [1, 1, 1, 0]",
    "a row of zeros would mask every key of the pad's query, and a softmax over nothing is 0/0; the pad's own "
    "output is never read (the loss skips it), so only its column needs hiding",
)
MASKED_ENCODER = Slip(
    "001 (Decoder during training: the model's Encoder)",
    "each encoder layer includes Masked Multi-Head Attention: prevents attending to future tokens",
    "the encoder's self-attention has no look-ahead mask (only padding is hidden): every source word sees the "
    "whole source; only the decoder's self-attention hides the future",
    "the source sentence is given whole before translation starts, nothing in it is 'future' (001 itself says "
    "'encoder self-attention can see the full input sequence'); the live line shows the encoder's weight above "
    "the diagonal",
)
CROSS_BACKWARDS = Slip(
    "003 (Decoder)",
    "the encoder's output is copied twice to make the Query and the Key; the Value is the output of the "
    "decoder's masked attention",
    "the queries come from the decoder (its masked self-attention's output); the keys and the values both come "
    "from the encoder's output — as 000 (Encoder Decoder Multi Head Attention) and 001 say",
    "each output step asks (query) which source words to read, and reads them (values) where it looked (keys): "
    "with 003's wiring the weights are a source × source table and the values have one row per output word, so "
    "the product does not even fit unless both sentences have the same length",
)
PEAK_LR = Slip(
    "001 (The learning rate schedule)",
    "peak learning rate ≈ 0.000707",
    "0.000699 (512^-0.5 · 4000^-0.5)",
    "0.000707 is what rounding 4000^-0.5 = 0.0158 up to 0.016 gives",
)
