"""The lesson's steps, in the order the notes teach them: data that `tt learn` and `--plain` read.

Each step has a title, a few lines of the idea with its formula, a toy example replayed on tt's own code
(`core.learn.toys`, `core.learn.topic_toys`: the notes' own example where they give one, else tt's, and
labelled so), the live view to open and on which sentence, one line saying what to look at on the live
model and what it should show, and where a note gets it wrong, with why (`core.learn.slips`). The live
numbers come from `core.learn.live`; `render_plain` puts a step and its numbers into text for a pipe or a
screen reader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from core.analysis.patterns import KIND_LEGEND
from core.learn import slips, topic_toys, toys
from core.learn.slips import Slip

ALIGNMENT_SENTENCE = "L'accord sur la zone économique européenne a été signé en août 1992."
ANIMAL_SENTENCE = "L'animal n'a pas traversé la rue parce qu'il était fatigué."
SHORT_SENTENCE = "Le chat dort sur le canapé."
SHORT_REFERENCE = "The cat is sleeping on the sofa."
# Step 3's word in three sentences: the same sense twice (time), then the other sense (weather). The shipped model
# translates all three right, and by the last encoder layer the other sense has moved much further away than the
# same sense has (tests/core/learn: the margin is checked on the shipped model).
CONTEXT_WORD = "temps"
CONTEXT_SENTENCES = (
    "Je n'ai pas le temps de lire.",
    "Nous avons le temps de manger.",
    "Le temps est magnifique aujourd'hui.",
)
NOTES, TT = "notes", "tt"  # whose toy example a step shows


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    idea: tuple[str, ...]  # a few lines, in our words
    formula: str
    toy: Callable[[], list[tuple[str, str]]] | None  # a small example on tt's code
    toy_source: str  # which note the toy (or its idea) comes from
    view: str  # the live view the lesson opens (a tt inspect view or one of the new panels)
    sentence: str  # the sentence the live view opens on
    slips: tuple[Slip, ...] = field(default_factory=tuple)
    toy_by: str = NOTES  # NOTES: the notes' own example, recomputed; TT: an example tt made up for the idea
    look: str = ""  # one line: what to look at in the live numbers, and what it should show
    # What a learner's own sentence replaces (`own_step`): SOURCE the sentence, PAIR a "source | reference" pair
    # (only when the learner gave one), NONE nothing (the step's point needs its own sentences).
    takes: str = "source"


SOURCE, PAIR, NONE = "source", "pair", "none"


def own_step(s: Step, own: str | None) -> Step:
    """The step on the learner's own sentence ("source" or "source | reference") where the step can take it."""
    if not own or s.takes == NONE:
        return s
    source, _, reference = (part.strip() for part in own.partition("|"))
    if s.takes == PAIR:
        return replace(s, sentence=f"{source} | {reference}") if reference else s
    return replace(s, sentence=source)


def toy_heading(s: Step) -> str:
    """The line above a step's toy: whose example it is, so a made-up one is never taken for the notes'."""
    if s.toy_by == NOTES:
        return f"The notes' example ({s.toy_source}), computed by tt:"
    return f"tt's example (for {s.toy_source}), computed by tt:"


STEPS: tuple[Step, ...] = (
    Step(
        "pieces",
        "From words to pieces",
        (
            "The model reads pieces, not words: SentencePiece cuts text into the 8,000 or so pieces that",
            "cover the training text best. A piece that starts a word carries ▁ (the space before it); a",
            "rare word, a number or an accented word the vocabulary lacks is spelled in several pieces.",
            "Every panel of the lesson shows pieces, ▁ and all.",
        ),
        "text → pieces → ids;  ids → pieces → text (▁ → space)",
        None,
        "001 (Tokenization)",
        "candidates",
        ALIGNMENT_SENTENCE,
        look="Look at the pieces: a word the vocabulary lacks comes in several, and joined they give the sentence back.",
    ),
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
        toy_by=TT,
        look="Look at each English piece's strongest source piece: mostly the French word it translates.",
    ),
    Step(
        "contextual",
        "Static and contextual embeddings",
        (
            "An embedding table gives a word the same vector in every sentence. Self-attention replaces it",
            "by a weighted sum of the sentence's vectors, so 'bank' beside 'money' and beside 'river' end up",
            "apart. Live: 'temps' as time in two sentences, as weather in a third.",
        ),
        "y_i = Σ_j w_ij v_j,  w_i = softmax_j(q_i · k_j / √d_k)",
        toys.static_vs_contextual,
        "001 (Self-attention geometric intuition)",
        "contextual",
        " | ".join(CONTEXT_SENTENCES),
        toy_by=TT,
        look="Look at the last layer: the weather 'temps' has moved much further from sentence 1's than the "
        "second time 'temps' (the control) has.",
        takes=NONE,
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
        look="Look at one query's row: q·k, then ÷√d_k, then weights that sum to 1 over the keys below.",
    ),
    Step(
        "attention_table",
        "A whole sentence's attention",
        (
            "One row per query word, one column per key word, each row summing to 1. A layer computes",
            "several such tables side by side, each with its own W^Q, W^K, W^V: each is called a head",
            "(step 8 shows how the heads split the work). The table here is layer 1's heads averaged; in",
            f"tt inspect's grid the mark beside each head names the pattern it shows: {KIND_LEGEND}.",
        ),
        "A = softmax(Q Kᵀ / √d_k),  A ∈ ℝ^{T×T}, Σ_j A_ij = 1",
        None,
        "000",
        "grid:encoder_self",
        ALIGNMENT_SENTENCE,
        look="Look at each row's strongest key: every row is a distribution over the whole sentence.",
    ),
    Step(
        "coreference",
        "Coreference: what does 'il' refer to?",
        (
            "'The animal didn't cross the street because it was tired': resolving 'it' needs the whole",
            "sentence. The notes say some encoder heads (step 5) put the weight of 'il' on 'animal' rather",
            "than 'rue'. Compare the best head's two weights with the even share a uniform head would give:",
            "favouring 'animal' over 'rue' without beating the even share is weak evidence ('depends').",
        ),
        "w(il → animal) vs w(il → rue), per head",
        None,
        "001 (The animal didn't cross the street…)",
        "heads:encoder_self",
        ANIMAL_SENTENCE,
        look="Look at the best head's weight on 'animal' against 'rue' and against the uniform share: "
        "the verdict weighs both.",
        takes=NONE,
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
        (slips.D_K_IS_512, slips.MONEY_BANK, slips.SIX_FOUR_OVER_ROOT_TWO, slips.ROOT_D_OVER_N),
        look="Look at the share of saturated rows (a weight ≥ 0.99): far more without ÷√d_k than with it.",
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
        (slips.EIGHT_TIMES_CHEAPER,),
        look="Look at the shapes: d_model splits into h × d_k and the concatenation gives d_model back.",
    ),
    Step(
        "cost",
        "What attention costs: O(N²) work, O(1) path",
        (
            "Every query meets every key: N² scores per head, and an N × N weight table to hold. The",
            "projections and the FFN cost N · d² each, so at sentence lengths they dominate; the N² part",
            "catches up only at N = 2·d_model + d_ff. In return any two words are one attention step apart,",
            "where an RNN carries the first word through N − 1 steps to reach the last.",
        ),
        "Q Kᵀ and A V: 2 · N² · d_model multiply-adds;  projections + FFN: N · (4 d² + 2 d · d_ff)",
        topic_toys.cost,
        "001 (Quadratic complexity), 003 (problems with RNN)",
        "grid:encoder_self",
        SHORT_SENTENCE,
        toy_by=TT,
        look="Look at the counted multiply-adds: the N² terms are a small share of a layer at this N.",
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
        (slips.EXTRAPOLATION,),
        look="Look at the shuffled-words errors: ~0 without positions (order invisible), large with them.",
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
        (slips.PE_039,),
        look="Look at the two norms: the scaled embedding is not drowned by the position vector.",
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
        (slips.SQUISHED_0_1, slips.UNIT_MEAN),
        look="Look at x̂: values below 0 and above 1, mean 0 — standardised, not squeezed into [0, 1].",
    ),
    Step(
        "residual_norm",
        "Why residuals, and why layer norm rather than batch norm",
        (
            "A residual adds a layer's input to its output, so the gradient has a path that multiplies by",
            "1 through every layer: deep stacks train. Layer norm standardises each piece by its own mean and",
            "variance; batch norm would use the whole batch's, so a sentence's numbers would change with the",
            "sentences and the padding beside it, and with batch size between training and translation.",
        ),
        "x + F(x): ∂/∂x = 1 + F'(x);  LN: per piece over d_model;  BN: per feature over the batch",
        topic_toys.residual,
        "002 (Residual connections, Layer normalisation)",
        "add_norm",
        SHORT_SENTENCE,
        toy_by=TT,
        look="Look at the two last lines: the memory does not move when another sentence shares the batch; "
        "batch norm would.",
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
        look="Look at how few of the d_ff units fire for one piece (ReLU zeroes the rest).",
    ),
    Step(
        "dropout",
        "Dropout",
        (
            "In training, dropout sets each activation to 0 with probability p and scales the rest by",
            "1/(1 − p); the paper drops 10 % after every sub-layer and after embedding + position. Each",
            "step trains a slightly different network, so no unit can lean on one other. At translation",
            "time dropout is off, and the same sentence always gets the same numbers.",
        ),
        "dropout(x)_i = x_i · m_i / (1 − p),  m_i ~ Bernoulli(1 − p)",
        topic_toys.dropout,
        "§5.4 of the paper (001: Regularisation)",
        "embed_position",
        SHORT_SENTENCE,
        toy_by=TT,
        look="Look at the log-probabilities: the same with dropout off, different at every draw with it on.",
    ),
    Step(
        "masks",
        "Decoder masks and the masked softmax",
        (
            "The decoder may not look ahead: scores of future positions (and padding) are set to −∞ before",
            "the softmax, so they get weight exactly 0 and the rows still sum to 1. The encoder has no such",
            "mask: the source is there whole.",
        ),
        "softmax((Q Kᵀ + M) / √d_k),  M_ij = −∞ for j > i",
        toys.masks,
        "000 (④ MASK)",
        "masks",
        SHORT_SENTENCE,
        (slips.MASK_AFTER_SOFTMAX, slips.MASK_SCORES, slips.PADDING_ROWS, slips.MASKED_ENCODER),
        look="Look at the weight above the diagonal: 0 in the decoder, well above 0 in the encoder.",
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
        "003 (Decoder), 000 (Encoder Decoder Multi Head Attention)",
        "explain:cross",
        SHORT_SENTENCE,
        (slips.CROSS_BACKWARDS,),
        toy_by=TT,
        look="Look at the first output piece's weights: one per source piece, summing to 1.",
    ),
    Step(
        "whole",
        "The whole encoder–decoder",
        (
            "Put together: the source's pieces are embedded and positioned, the encoder stack turns them into",
            "the memory (one vector per source piece), and the decoder reads <s> plus the output so far,",
            "attends to itself (masked) and to the memory (cross), and its last vectors become a",
            "distribution over the vocabulary for the next piece.",
        ),
        "p(y_t | y_<t, x) = softmax(Decoder(y_<t, Encoder(x)) Wᵀ_emb)",
        topic_toys.whole,
        "003 (the figure), 001 (Full architecture)",
        "shapes",
        SHORT_SENTENCE,
        toy_by=TT,
        look="Look at the shapes from the source ids to one distribution per output position.",
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
        "003, 000 (The Final Linear And Softmax Layer)",
        "candidates",
        SHORT_SENTENCE,
        toy_by=TT,
        look="Look at the first piece's five most probable candidates, best first.",
    ),
    Step(
        "generation",
        "Generating, one piece at a time",
        (
            "The encoder runs once. The decoder starts from <s>, gives a distribution for the next piece,",
            "the most probable is appended, and the longer prefix goes in again, until </s>. At every step",
            "the masked self-attention reads the prefix and the cross-attention reads the source.",
            "Press i to step through the same loop yourself in tt inspect, q to come back.",
        ),
        "y_t = argmax p(· | y_<t, x),  y_0 = <s>, until y_t = </s>",
        None,
        "003 (TIME STEP 1…), 001 (Decoder during inference)",
        "cross",
        SHORT_SENTENCE,
        look="Look at each step: the top candidates, the source piece cross-attention reads, the piece chosen.",
    ),
    Step(
        "training",
        "Training: the reference's probabilities, label smoothing",
        (
            "Training feeds the reference shifted right and maximises the probability of each next",
            "reference piece (teacher forcing: all positions at once, the mask keeps the future out);",
            "label smoothing moves ε of the target mass onto every piece.",
        ),
        "loss = −Σ_t Σ_v q(v) log p(v | y_<t, x),  q = (1 − ε) one-hot + ε / V",
        toys.training,
        "001 (Training)",
        "reference",
        f"{SHORT_SENTENCE} | {SHORT_REFERENCE}",
        toy_by=TT,
        look="Look at each reference piece's probability and rank: what the loss pushes up.",
        takes=PAIR,
    ),
    Step(
        "optimizer",
        "Adam and the learning-rate schedule",
        (
            "The paper trains with Adam, β1 = 0.9, β2 = 0.98, ε = 1e-9: each weight moves by its gradient's",
            "running mean over the root of its running square, so the step size is set by the learning",
            "rate, not by the gradient's scale. The rate rises linearly for warm-up steps, then decays as",
            "step^-0.5. Live: the curve of the run that made this model, from its card.",
        ),
        "lrate = scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)",
        topic_toys.adam,
        "§5.3 of the paper, 001 (The learning rate schedule)",
        "reference",
        f"{SHORT_SENTENCE} | {SHORT_REFERENCE}",
        (slips.PEAK_LR,),
        toy_by=TT,
        look="Look at the curve: up for the warm-up steps, peaking at the end of warm-up, then slowly down.",
        takes=PAIR,
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
        toy_by=TT,
        look="Look at the finished hypotheses: ranked by score = log p / lp, the best first.",
    ),
    Step(
        "bleu",
        "Measuring a translation: BLEU",
        (
            "BLEU counts the output's 1- to 4-grams found in a reference, takes the geometric mean of the",
            "four precisions and multiplies by a brevity penalty for outputs shorter than the reference.",
            "The paper reports corpus BLEU on newstest2014: 28.4 English→German, 41.0 English→French (big",
            "model; 41.8 in its later revision). One sentence's BLEU is noisy; a test set's is what a card reports.",
        ),
        "BLEU = BP · exp(¼ Σ_n log p_n),  BP = min(1, e^{1 − r/c})",
        topic_toys.bleu,
        "§6.1 of the paper",
        "reference",
        f"{SHORT_SENTENCE} | {SHORT_REFERENCE}",
        toy_by=TT,
        look="Look at the precisions: each word unlike the reference costs an n-gram of every order.",
        takes=PAIR,
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
    number = [x.key for x in STEPS].index(s.key) + 1  # `s` may be a step on the learner's own sentence
    out = [f"Step {number}/{len(STEPS)}: {s.title}", "", *s.idea, "", f"    {s.formula}"]
    if s.toy is not None:
        out += ["", toy_heading(s)]
        out += [f"  {label}: {value}" for label, value in s.toy()]
    if live:
        out += ["", f"On the live model ({s.sentence}):"]
        if s.look:
            out.append(f"  {s.look}")
        out += [f"  {label}: {value}" for label, value in live]
    for slip in s.slips:
        out += ["", f"Where a note is wrong — {slip.note}:", f"  it says: {slip.says}", f"  right: {slip.right}"]
        out += [f"  why: {slip.why}"]
    out.append(f"\nView: {s.view}")
    return "\n".join(out) + "\n"
