"""The lesson's steps, in the order the notes teach them: data that `tt learn` and `--plain` read.

Each step has a title, a few lines of the idea with its formula, the notes' toy example replayed on
tt's own code (`core.learn.toys`), the live view to open and on which sentence, and where a note
gets it wrong, with why. The live numbers come from `core.learn.live`; `render_plain` puts a step
and its numbers into text for a pipe or a screen reader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.analysis.patterns import KIND_LEGEND
from core.learn import toys

ALIGNMENT_SENTENCE = "L'accord sur la zone économique européenne a été signé en août 1992."
ANIMAL_SENTENCE = "L'animal n'a pas traversé la rue parce qu'il était fatigué."
SHORT_SENTENCE = "Le chat dort sur le canapé."
# Step 2's word in three sentences: the same sense twice (time), then the other sense (weather). The shipped model
# translates all three right, and by the last encoder layer the other sense has moved much further away than the
# same sense has (tests/core/learn: the margin is checked on the shipped model).
CONTEXT_WORD = "temps"
CONTEXT_SENTENCES = (
    "Je n'ai pas le temps de lire.",
    "Nous avons le temps de manger.",
    "Le temps est magnifique aujourd'hui.",
)


@dataclass(frozen=True)
class Slip:
    """Where a note is wrong: what it says, what is right, and why."""

    note: str  # seed file and section
    says: str
    right: str
    why: str


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    idea: tuple[str, ...]  # a few lines, in our words
    formula: str
    toy: Callable[[], list[tuple[str, str]]] | None  # the notes' example on tt's code
    toy_source: str  # which note the toy comes from
    view: str  # the live view the lesson opens (a tt inspect view or one of the new panels)
    sentence: str  # the sentence the live view opens on
    slips: tuple[Slip, ...] = field(default_factory=tuple)


STEPS: tuple[Step, ...] = (
    Step(
        "alignment",
        "Attention as alignment",
        (
            "An RNN encoder squeezes the sentence into one vector; attention lets each output word look back",
            "at every source word and take a weighted average of them, with weights it computes itself.",
            "Read as a table, the weights align output words with source words.",
        ),
        "c_i = Σ_j α_ij h_j,  α_ij = softmax_j(e_ij)",
        toys.context_vector,
        "000 (Bahdanau et al., §3.1)",
        "cross",
        ALIGNMENT_SENTENCE,
    ),
    Step(
        "contextual",
        "Static and contextual embeddings",
        (
            "An embedding table gives a word the same vector in every sentence. Self-attention replaces it",
            "by a weighted sum of the sentence's vectors, so 'bank' beside 'money' and beside 'river' end up",
            "apart. Live: 'temps' as time in two sentences, as weather in a third. Look at the last layer:",
            "the weather 'temps' has moved much further from the first than the second time 'temps' has.",
        ),
        "y_i = Σ_j w_ij v_j",
        toys.static_vs_contextual,
        "001 (Self-attention geometric intuition)",
        "contextual",
        " | ".join(CONTEXT_SENTENCES),
    ),
    Step(
        "the_cat_sat",
        "Self-attention by hand: the cat sat",
        (
            "Every word is a query, a key and a value. Its query is compared with every key (dot products),",
            "the scores are scaled and turned into weights by a softmax, and the output is the weighted sum",
            "of the values. With W = I the three are the embeddings themselves.",
        ),
        "Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V",
        toys.the_cat_sat,
        "000 (Eg: The Cat Sat)",
        "explain",
        SHORT_SENTENCE,
    ),
    Step(
        "attention_table",
        "A whole sentence's attention",
        (
            "One row per query word, one column per key word, each row summing to 1. The model's heads each",
            "draw their own table; the grid shows all of them at once, and the mark beside each head names",
            f"the kind of pattern it shows: {KIND_LEGEND}.",
        ),
        "A = softmax(Q Kᵀ / √d_k),  A ∈ ℝ^{T×T}, Σ_j A_ij = 1",
        None,
        "000",
        "grid:encoder_self",
        ALIGNMENT_SENTENCE,
    ),
    Step(
        "coreference",
        "Coreference: what does 'il' refer to?",
        (
            "'The animal didn't cross the street because it was tired': resolving 'it' needs the whole",
            "sentence. The notes say some encoder heads put the weight of 'il' on 'animal' rather than 'rue'.",
            "Look at the best head's two weights and the uniform share: a head that favours 'animal' but gives",
            "it no more than an even share is weak evidence, and the verdict line says 'depends'.",
        ),
        "w(il → animal) vs w(il → rue), per head",
        None,
        "001 (The animal didn't cross the street…)",
        "heads:encoder_self",
        ANIMAL_SENTENCE,
    ),
    Step(
        "scaling",
        "Why divide by √d_k",
        (
            "A dot product of d_k independent unit-variance components has variance d_k, so scores grow",
            "with the head size and the softmax saturates: one weight near 1, gradients near 0. Dividing",
            "by √d_k brings the variance back to 1. The live view shows both softmaxes per head.",
        ),
        "Var(q·k) = d_k  →  Var(q·k / √d_k) = 1",
        toys.scaling,
        "000 (Scaling), 001 (money/bank)",
        "scaling",
        SHORT_SENTENCE,
        (
            Slip(
                "003 (Self-attention), 004",
                "d_k is the dimension of the embedding, 512; divide by √512",
                "d_k = d_model / h: 64 in the base model (512 / 8); the live view shows this model's",
                "each head's queries and keys have d_k components; the division matches the head's dot product",
            ),
            Slip(
                "001 (money/bank)",
                "10/√2 ≈ 7.09, 32/√2 ≈ 22.69, softmax = [0.2, 0.8]",
                "7.07 and 22.63; softmax ≈ [0.0000002, 1.0]",
                "scores 15.6 apart leave nothing to the smaller one; [0.2, 0.8] needs a gap of ln 4 = 1.39",
            ),
        ),
    ),
    Step(
        "multi_head",
        "Multi-head attention and its shapes",
        (
            "The model splits d_model into h heads of d_k = d_model / h, attends in each separately, then",
            "concatenates and mixes them with W^O. Each head can look for something different: in tt",
            "inspect's grid (g) the mark beside each head says what it looks for on the sentence.",
        ),
        "MultiHead(Q, K, V) = Concat(head_1 … head_h) W^O",
        toys.multi_head_shapes,
        "001 (Multi-head attention)",
        "shapes",
        SHORT_SENTENCE,
        (
            Slip(
                "001 (Computational & memory efficiency)",
                "8 heads of 64 are 8× cheaper than one head of 512",
                "the same number of multiply-adds: h · T² · d_k = T² · d_model",
                "splitting divides the work per head, not the total (tt analyze claims times it)",
            ),
        ),
    ),
    Step(
        "positions",
        "Positional encoding",
        (
            "Attention alone ignores word order: shuffle the words and the outputs shuffle with them. A",
            "position vector of sines and cosines at geometric frequencies is added to each embedding;",
            "PE(p)·PE(q) depends only on p − q.",
        ),
        "PE(pos, 2i) = sin(pos / 10000^{2i/d}),  PE(pos, 2i+1) = cos(pos / 10000^{2i/d})",
        toys.positional_by_hand,
        "000 (d = 4), 001 (d = 6)",
        "positions",
        SHORT_SENTENCE,
        (
            Slip(
                "001 (Sinusoidal) vs 002 (Position representations)",
                "001: 'works for sequences longer than those seen in training'; 002: 'extrapolation isn't possible'",
                "the formula is defined at any position, but a model trained on short sentences has never read "
                "the vectors of far positions",
                "both are half true: the table extrapolates, the trained model need not (tt's max_len caps it)",
            ),
        ),
    ),
    Step(
        "embed_position",
        "Embedding + position",
        (
            "The first layer reads the token's embedding, multiplied by √d_model, plus its position vector.",
            "Addition keeps the width at d_model; the √d_model keeps the embedding from being drowned.",
        ),
        "x_pos = E[token] · √d_model + PE(pos)",
        toys.embedding_plus_position,
        "000 (Input embedding and positional encoding)",
        "embed_position",
        SHORT_SENTENCE,
    ),
    Step(
        "add_norm",
        "Add & Norm",
        (
            "Each sub-layer's output is added to its input (the residual) and the sum is normalised across",
            "its d_model components: mean 0, variance 1, then scaled by γ and shifted by β.",
        ),
        "LayerNorm(x + Sublayer(x)),  x̂ = (z − μ) / √(σ² + ε),  y = γ x̂ + β",
        toys.add_and_norm,
        "000 (Layer normalisation)",
        "add_norm",
        SHORT_SENTENCE,
        (
            Slip(
                "003 (Add and norm)",
                "normalisation squishes the values between 0 and 1",
                "x̂ has mean 0 and variance 1: values run below 0 and above 1 ([2, 4, 6, 8] → ±1.34)",
                "that is min-max scaling (001 shows it too); LayerNorm standardises",
            ),
        ),
    ),
    Step(
        "encoder_stack",
        "The encoder stack and its feed-forward networks",
        (
            "An encoder layer is self-attention then a position-wise feed-forward network, each wrapped in",
            "Add & Norm; layers are stacked. The FFN widens each vector to d_ff, applies ReLU, narrows back.",
        ),
        "FFN(x) = max(0, x W1 + b1) W2 + b2",
        toys.feed_forward,
        "001 (FFN), 003",
        "ffn",
        SHORT_SENTENCE,
    ),
    Step(
        "masks",
        "Decoder masks and the masked softmax",
        (
            "The decoder may not look ahead: scores of future positions (and padding) are set to −∞ before",
            "the softmax, so they get weight exactly 0 and the rows still sum to 1.",
        ),
        "softmax((Q Kᵀ + M) / √d_k),  M_ij = −∞ for j > i",
        toys.masks,
        "000 (④ MASK)",
        "masks",
        SHORT_SENTENCE,
        (
            Slip(
                "003 (Decoder)",
                "the masking is a manipulation done after the softmax",
                "the mask goes on the scores, before the softmax",
                "zeroing weights after the softmax leaves rows that no longer sum to 1, and the kept weights "
                "still depend on the future scores through the softmax's normaliser: the future leaks in",
            ),
            Slip(
                "000 (④ MASK)",
                "scores 1.9, 3.1, 5.1 'divided by 2'",
                "Q Kᵀ is 1.74, 2.78, 4.46, and the division was not done; the padded row is [⅓, ⅓, ⅓, 0]",
                "recomputed from the note's own inputs with tt's attention",
            ),
        ),
    ),
    Step(
        "cross_attention",
        "Cross-attention, step by step",
        (
            "In each decoder layer the queries come from the decoder, the keys and values from the encoder's",
            "output: each output step reads the source sentence afresh.",
        ),
        "CrossAttention(Q_dec, K_enc, V_enc) = softmax(Q_dec K_encᵀ / √d_k) V_enc",
        toys.cross_attention,
        "003 (Decoder)",
        "explain:cross",
        SHORT_SENTENCE,
    ),
    Step(
        "output",
        "The final linear layer and softmax",
        (
            "The decoder's last vector is projected onto the vocabulary (tt ties this matrix to the",
            "embeddings) and a softmax turns the logits into the next piece's probabilities.",
        ),
        "p(y_t | y_<t, x) = softmax(h_t Wᵀ_emb)",
        toys.final_softmax,
        "003",
        "candidates",
        SHORT_SENTENCE,
    ),
    Step(
        "training",
        "Training: the reference's probabilities, label smoothing, warm-up",
        (
            "Training feeds the reference shifted right and maximises the probability of each next",
            "reference piece; label smoothing moves ε of the target mass onto every piece; the learning",
            "rate rises linearly for warm-up steps, then decays as step^-0.5.",
        ),
        "lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)",
        toys.training,
        "001 (Training)",
        "reference",
        SHORT_SENTENCE + " | The cat is sleeping on the sofa.",
        (
            Slip(
                "001 (The learning rate schedule)",
                "peak learning rate ≈ 0.000707",
                "0.000699 (512^-0.5 · 4000^-0.5)",
                "0.000707 is what rounding 4000^-0.5 = 0.0158 up to 0.016 gives",
            ),
        ),
    ),
    Step(
        "beam",
        "Beam search",
        (
            "Greedy decoding keeps the single best piece at each step; beam search keeps the k best partial",
            "translations and ranks finished ones by log-probability over a length penalty.",
        ),
        "score(Y) = log p(Y | X) / ((5 + |Y|) / 6)^α",
        toys.beam,
        "000 (Beam score)",
        "beam",
        ALIGNMENT_SENTENCE,
    ),
)


def step(key_or_number: str | int) -> Step:
    """A step by key or by number (1-based, as `tt learn --step N`)."""
    if isinstance(key_or_number, int) or str(key_or_number).isdigit():
        n = int(key_or_number)
        if not 1 <= n <= len(STEPS):
            raise ValueError(f"step {n} does not exist; the lesson has steps 1 to {len(STEPS)}")
        return STEPS[n - 1]
    for s in STEPS:
        if s.key == key_or_number:
            return s
    raise ValueError(f"no step {key_or_number!r}; the steps are {', '.join(s.key for s in STEPS)}")


def render_plain(s: Step, live: list[tuple[str, str]] | None = None) -> str:
    """One step as plain text: title, idea, formula, the notes' toy on tt's code, the live numbers, the slips."""
    number = STEPS.index(s) + 1
    out = [f"Step {number}/{len(STEPS)}: {s.title}", "", *s.idea, "", f"    {s.formula}"]
    if s.toy is not None:
        out += ["", f"The notes' example ({s.toy_source}), computed by tt:"]
        out += [f"  {label}: {value}" for label, value in s.toy()]
    if live:
        out += ["", f"On the live model ({s.sentence}):"]
        out += [f"  {label}: {value}" for label, value in live]
    for slip in s.slips:
        out += ["", f"Where a note is wrong — {slip.note}:", f"  it says: {slip.says}", f"  right: {slip.right}"]
        out += [f"  why: {slip.why}"]
    out.append(f"\nView: {s.view}")
    return "\n".join(out) + "\n"
