"""The lesson's steps, in the order the notes teach them: data that `tt learn` and `--plain` read.

Each step (`core.learn.lesson.Step`) has a title, a few lines of the idea with its formula, a toy example
replayed on tt's own code (`core.learn.toys`, `core.learn.topic_toys`: the notes' own example where they give
one, else tt's, and labelled so), the sentences it opens on, its live numbers and attention table
(`core.learn.live`, `core.learn.live_topics`), the view `tt inspect` opens, one line saying what to look at
on the live model and what it should show, and where a note gets it wrong, with why (`core.learn.slips`).
`render_plain` puts a step and its numbers into text for a pipe or a screen reader.
"""

from __future__ import annotations

from core.analysis.patterns import KIND_LEGEND
from core.learn import live, live_topics, slips, topic_toys, toys
from core.learn.lesson import NONE, PAIR, TT, Opening, Step, toy_heading
from core.learn.live import Lines

ALIGNMENT_SENTENCE = "L'accord sur la zone économique européenne a été signé en août 1992."
ANIMAL_SENTENCE = "L'animal n'a pas traversé la rue parce qu'il était fatigué."
SHORT_SENTENCE = "Le chat dort sur le canapé."
SHORT_REFERENCE = "The cat is sleeping on the sofa."
# Step 3's word (live.CONTEXT_WORD) in three sentences: the same sense twice (time), then the other sense
# (weather). The shipped model translates all three right, and by the last encoder layer the other sense has
# moved much further away than the same sense has (tests/core/learn: the margin is checked on the shipped model).
CONTEXT_SENTENCES = (
    "Je n'ai pas le temps de lire.",
    "Nous avons le temps de manger.",
    "Le temps est magnifique aujourd'hui.",
)


STEPS: tuple[Step, ...] = (
    Step(
        key="pieces",
        title="From words to pieces",
        idea=(
            "The model reads pieces, not words: SentencePiece cuts text into the 8,000 or so pieces that",
            "cover the training text best. A piece that starts a word carries ▁ (the space before it); a",
            "rare word, a number or an accented word the vocabulary lacks is spelled in several pieces.",
            "Every panel of the lesson shows pieces, ▁ and all.",
        ),
        formula="text → pieces → ids;  ids → pieces → text (▁ → space)",
        toy=None,
        toy_source="001 (Tokenization)",
        sentences=(ALIGNMENT_SENTENCE,),
        live=live_topics.pieces,
        opens=Opening("candidates"),
        look="Look at the pieces: a word the vocabulary lacks comes in several, and joined they give the sentence back.",
    ),
    Step(
        key="alignment",
        title="Attention as alignment",
        idea=(
            "An RNN encoder squeezes the sentence into one vector; attention lets each output word look back",
            "at every source word and take a weighted average of them, with weights it computes itself.",
            "Read as a table, the weights align output words with source words.",
        ),
        formula="c_i = Σ_j α_ij h_j,  α_ij = softmax_j(e_ij)",
        toy=toys.context_vector,
        toy_source="000 (Bahdanau et al., §3.1)",
        toy_by=TT,
        sentences=(ALIGNMENT_SENTENCE,),
        live=live.alignment,
        matrix=live.cross_mean_matrix,
        opens=Opening("cross"),
        look="Look at each English piece's strongest source piece: mostly the French word it translates.",
    ),
    Step(
        key="contextual",
        title="Static and contextual embeddings",
        idea=(
            "An embedding table gives a word the same vector in every sentence. Self-attention replaces it",
            "by a weighted sum of the sentence's vectors, so 'bank' beside 'money' and beside 'river' end up",
            "apart. Live: 'temps' as time in two sentences, as weather in a third.",
        ),
        formula="y_i = Σ_j w_ij v_j,  w_i = softmax_j(q_i · k_j / √d_k)",
        toy=toys.static_vs_contextual,
        toy_source="001 (Self-attention geometric intuition)",
        toy_by=TT,
        sentences=CONTEXT_SENTENCES,
        takes=NONE,
        live=live.contextual,
        opens=Opening("contextual", insides="contextual"),
        look="Look at the last layer: the weather 'temps' has moved much further from sentence 1's than the "
        "second time 'temps' (the control) has.",
    ),
    Step(
        key="the_cat_sat",
        title="Self-attention by hand: the cat sat",
        idea=(
            "Every word is a query, a key and a value. Its query is compared with every key (dot products),",
            "the scores are scaled and turned into weights by a softmax, and the output is the weighted sum",
            "of the values. With W = I the three are the embeddings themselves.",
        ),
        formula="Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V",
        toy=toys.the_cat_sat,
        toy_source="000 (Eg: The Cat Sat)",
        sentences=(SHORT_SENTENCE,),
        live=live.the_cat_sat,
        opens=Opening("explain", mode="explain"),
        look="Look at one query's row: q·k, then ÷√d_k, then weights that sum to 1 over the keys below.",
    ),
    Step(
        key="attention_table",
        title="A whole sentence's attention",
        idea=(
            "One row per query word, one column per key word, each row summing to 1. A layer computes",
            "several such tables side by side, each with its own W^Q, W^K, W^V: each is called a head",
            "(step 8 shows how the heads split the work). The table here is layer 1's heads averaged; in",
            f"tt inspect's grid the mark beside each head names the pattern it shows: {KIND_LEGEND}.",
        ),
        formula="A = softmax(Q Kᵀ / √d_k),  A ∈ ℝ^{T×T}, Σ_j A_ij = 1",
        toy=None,
        toy_source="000",
        sentences=(ALIGNMENT_SENTENCE,),
        live=live.attention_table,
        matrix=live.encoder_matrix,
        opens=Opening("grid:encoder_self", family="encoder_self", grid=True),
        look="Look at each row's strongest key: every row is a distribution over the whole sentence.",
    ),
    Step(
        key="coreference",
        title="Coreference: what does 'il' refer to?",
        idea=(
            "'The animal didn't cross the street because it was tired': resolving 'it' needs the whole",
            "sentence. The notes say some encoder heads (step 5) put the weight of 'il' on 'animal' rather",
            "than 'rue'. Compare the best head's two weights with the even share a uniform head would give:",
            "favouring 'animal' over 'rue' without beating the even share is weak evidence ('depends').",
        ),
        formula="w(il → animal) vs w(il → rue), per head",
        toy=None,
        toy_source="001 (The animal didn't cross the street…)",
        sentences=(ANIMAL_SENTENCE,),
        takes=NONE,
        live=live.coreference,
        matrix=live.coreference_matrix,
        opens=Opening("heads:encoder_self", family="encoder_self"),
        look="Look at the best head's weight on 'animal' against 'rue' and against the uniform share: "
        "the verdict weighs both.",
    ),
    Step(
        key="scaling",
        title="Why divide by √d_k",
        idea=(
            "A dot product of d_k independent unit-variance components has variance d_k, so scores grow",
            "with the head size and the softmax saturates: one weight near 1, gradients near 0. Dividing",
            "by √d_k brings the variance back to 1. The live view shows both softmaxes per head.",
        ),
        formula="Var(q·k) = d_k  →  Var(q·k / √d_k) = 1",
        toy=toys.scaling,
        toy_source="000 (Scaling), 001 (money/bank)",
        sentences=(SHORT_SENTENCE,),
        live=live.scaling,
        opens=Opening("scaling", insides="scaling"),
        look="Look at the share of saturated rows (a weight ≥ 0.99): far more without ÷√d_k than with it.",
        slips=(slips.D_K_IS_512, slips.MONEY_BANK, slips.SIX_FOUR_OVER_ROOT_TWO, slips.ROOT_D_OVER_N),
    ),
    Step(
        key="multi_head",
        title="Multi-head attention and its shapes",
        idea=(
            "The model splits d_model into h heads of d_k = d_model / h, attends in each separately, then",
            "concatenates and mixes them with W^O. Each head can look for something different: in tt",
            "inspect's grid (g) the mark beside each head says what it looks for on the sentence.",
        ),
        formula="MultiHead(Q, K, V) = Concat(head_1 … head_h) W^O",
        toy=toys.multi_head_shapes,
        toy_source="001 (Multi-head attention)",
        sentences=(SHORT_SENTENCE,),
        live=live.multi_head,
        opens=Opening("shapes", insides="shapes"),
        look="Look at the shapes: d_model splits into h × d_k and the concatenation gives d_model back.",
        slips=(slips.EIGHT_TIMES_CHEAPER,),
    ),
    Step(
        key="cost",
        title="What attention costs: O(N²) work, O(1) path",
        idea=(
            "Every query meets every key: N² scores per head, and an N × N weight table to hold. The",
            "projections and the FFN cost N · d² each, so at sentence lengths they dominate; the N² part",
            "catches up only at N = 2·d_model + d_ff. In return any two words are one attention step apart,",
            "where an RNN carries the first word through N − 1 steps to reach the last.",
        ),
        formula="Q Kᵀ and A V: 2 · N² · d_model multiply-adds;  projections + FFN: N · (4 d² + 2 d · d_ff)",
        toy=topic_toys.cost,
        toy_source="001 (Quadratic complexity), 003 (problems with RNN)",
        toy_by=TT,
        sentences=(SHORT_SENTENCE,),
        live=live_topics.cost,
        opens=Opening("grid:encoder_self", family="encoder_self", grid=True),
        look="Look at the counted multiply-adds: the N² terms are a small share of a layer at this N.",
    ),
    Step(
        key="positions",
        title="Positional encoding",
        idea=(
            "Attention alone ignores word order: shuffle the words and the outputs shuffle with them. A",
            "position vector of sines and cosines at geometric frequencies is added to each embedding;",
            "PE(p)·PE(q) depends only on p − q.",
        ),
        formula="PE(pos, 2i) = sin(pos / 10000^{2i/d}),  PE(pos, 2i+1) = cos(pos / 10000^{2i/d})",
        toy=toys.positional_by_hand,
        toy_source="000 (d = 4), 001 (d = 6)",
        sentences=(SHORT_SENTENCE,),
        live=live.positions,
        opens=Opening("positions", insides="positions"),
        look="Look at the shuffled-words errors: ~0 without positions (order invisible), large with them.",
        slips=(slips.EXTRAPOLATION,),
    ),
    Step(
        key="embed_position",
        title="Embedding + position",
        idea=(
            "The first layer reads the token's embedding, multiplied by √d_model, plus its position vector.",
            "Addition keeps the width at d_model; the √d_model keeps the embedding from being drowned.",
        ),
        formula="x_pos = E[token] · √d_model + PE(pos)",
        toy=toys.embedding_plus_position,
        toy_source="000 (Input embedding and positional encoding)",
        sentences=(SHORT_SENTENCE,),
        live=live.embed_and_position,
        opens=Opening("embed_position", insides="embedding"),
        look="Look at the two norms: the scaled embedding is not drowned by the position vector.",
        slips=(slips.PE_039,),
    ),
    Step(
        key="add_norm",
        title="Add & Norm",
        idea=(
            "Each sub-layer's output is added to its input (the residual) and the sum is normalised across",
            "its d_model components: mean 0, variance 1, then scaled by γ and shifted by β.",
        ),
        formula="LayerNorm(x + Sublayer(x)),  x̂ = (z − μ) / √(σ² + ε),  y = γ x̂ + β",
        toy=toys.add_and_norm,
        toy_source="000 (Layer normalisation)",
        sentences=(SHORT_SENTENCE,),
        live=live.add_norm,
        opens=Opening("add_norm", insides="add_norm"),
        look="Look at x̂: values below 0 and above 1, mean 0 — standardised, not squeezed into [0, 1].",
        slips=(slips.SQUISHED_0_1, slips.UNIT_MEAN),
    ),
    Step(
        key="residual_norm",
        title="Why residuals, and why layer norm rather than batch norm",
        idea=(
            "A residual adds a layer's input to its output, so the gradient has a path that multiplies by",
            "1 through every layer: deep stacks train. Layer norm standardises each piece by its own mean and",
            "variance; batch norm would use the whole batch's, so a sentence's numbers would change with the",
            "sentences and the padding beside it, and with batch size between training and translation.",
        ),
        formula="x + F(x): ∂/∂x = 1 + F'(x);  LN: per piece over d_model;  BN: per feature over the batch",
        toy=topic_toys.residual,
        toy_source="002 (Residual connections, Layer normalisation)",
        toy_by=TT,
        sentences=(SHORT_SENTENCE,),
        live=live_topics.residual_norm,
        opens=Opening("add_norm", insides="add_norm"),
        look="Look at the two last lines: the memory does not move when another sentence shares the batch; "
        "batch norm would.",
    ),
    Step(
        key="encoder_stack",
        title="The encoder stack and its feed-forward networks",
        idea=(
            "An encoder layer is self-attention then a position-wise feed-forward network, each wrapped in",
            "Add & Norm; layers are stacked. The FFN widens each vector to d_ff, applies ReLU, narrows back.",
        ),
        formula="FFN(x) = max(0, x W1 + b1) W2 + b2",
        toy=toys.feed_forward,
        toy_source="001 (FFN), 003",
        sentences=(SHORT_SENTENCE,),
        live=live.encoder_stack,
        opens=Opening("ffn", insides="ffn"),
        look="Look at how few of the d_ff units fire for one piece (ReLU zeroes the rest).",
    ),
    Step(
        key="dropout",
        title="Dropout",
        idea=(
            "In training, dropout sets each activation to 0 with probability p and scales the rest by",
            "1/(1 − p); the paper drops 10 % after every sub-layer and after embedding + position. Each",
            "step trains a slightly different network, so no unit can lean on one other. At translation",
            "time dropout is off, and the same sentence always gets the same numbers.",
        ),
        formula="dropout(x)_i = x_i · m_i / (1 − p),  m_i ~ Bernoulli(1 − p)",
        toy=topic_toys.dropout,
        toy_source="§5.4 of the paper (001: Regularisation)",
        toy_by=TT,
        sentences=(SHORT_SENTENCE,),
        live=live_topics.dropout,
        opens=Opening("embed_position", insides="embedding"),
        look="Look at the log-probabilities: the same with dropout off, different at every draw with it on.",
    ),
    Step(
        key="masks",
        title="Decoder masks and the masked softmax",
        idea=(
            "The decoder may not look ahead: scores of future positions (and padding) are set to −∞ before",
            "the softmax, so they get weight exactly 0 and the rows still sum to 1. The encoder has no such",
            "mask: the source is there whole.",
        ),
        formula="softmax((Q Kᵀ + M) / √d_k),  M_ij = −∞ for j > i",
        toy=toys.masks,
        toy_source="000 (④ MASK)",
        sentences=(SHORT_SENTENCE,),
        live=live.masks,
        matrix=live.masks_matrix,
        opens=Opening("masks", views=True),
        look="Look at the weight above the diagonal: 0 in the decoder, well above 0 in the encoder.",
        slips=(slips.MASK_AFTER_SOFTMAX, slips.MASK_SCORES, slips.PADDING_ROWS, slips.MASKED_ENCODER),
    ),
    Step(
        key="cross_attention",
        title="Cross-attention, step by step",
        idea=(
            "In each decoder layer the queries come from the decoder, the keys and values from the encoder's",
            "output: each output step reads the source sentence afresh.",
        ),
        formula="CrossAttention(Q_dec, K_enc, V_enc) = softmax(Q_dec K_encᵀ / √d_k) V_enc",
        toy=toys.cross_attention,
        toy_source="003 (Decoder), 000 (Encoder Decoder Multi Head Attention)",
        toy_by=TT,
        sentences=(SHORT_SENTENCE,),
        live=live.cross_attention,
        matrix=live.cross_head_matrix,
        opens=Opening("explain:cross", mode="explain"),
        look="Look at the first output piece's weights: one per source piece, summing to 1.",
        slips=(slips.CROSS_BACKWARDS,),
    ),
    Step(
        key="whole",
        title="The whole encoder–decoder",
        idea=(
            "Put together: the source's pieces are embedded and positioned, the encoder stack turns them into",
            "the memory (one vector per source piece), and the decoder reads <s> plus the output so far,",
            "attends to itself (masked) and to the memory (cross), and its last vectors become a",
            "distribution over the vocabulary for the next piece.",
        ),
        formula="p(y_t | y_<t, x) = softmax(Decoder(y_<t, Encoder(x)) Wᵀ_emb)",
        toy=topic_toys.whole,
        toy_source="003 (the figure), 001 (Full architecture)",
        toy_by=TT,
        sentences=(SHORT_SENTENCE,),
        live=live_topics.whole,
        opens=Opening("shapes", insides="shapes"),
        look="Look at the shapes from the source ids to one distribution per output position.",
    ),
    Step(
        key="output",
        title="The final linear layer and softmax",
        idea=(
            "The decoder's last vector is projected onto the vocabulary (tt ties this matrix to the",
            "embeddings) and a softmax turns the logits into the next piece's probabilities.",
        ),
        formula="p(y_t | y_<t, x) = softmax(h_t Wᵀ_emb)",
        toy=toys.final_softmax,
        toy_source="003, 000 (The Final Linear And Softmax Layer)",
        toy_by=TT,
        sentences=(SHORT_SENTENCE,),
        live=live.output,
        opens=Opening("candidates"),
        look="Look at the first piece's five most probable candidates, best first.",
    ),
    Step(
        key="generation",
        title="Generating, one piece at a time",
        idea=(
            "The encoder runs once. The decoder starts from <s>, gives a distribution for the next piece,",
            "the most probable is appended, and the longer prefix goes in again, until </s>. At every step",
            "the masked self-attention reads the prefix and the cross-attention reads the source.",
            "Press i to step through the same loop yourself in tt inspect, q to come back.",
        ),
        formula="y_t = argmax p(· | y_<t, x),  y_0 = <s>, until y_t = </s>",
        toy=None,
        toy_source="003 (TIME STEP 1…), 001 (Decoder during inference)",
        sentences=(SHORT_SENTENCE,),
        live=live_topics.generation,
        matrix=live.cross_mean_matrix,
        opens=Opening("cross"),
        look="Look at each step: the top candidates, the source piece cross-attention reads, the piece chosen.",
    ),
    Step(
        key="training",
        title="Training: the reference's probabilities, label smoothing",
        idea=(
            "Training feeds the reference shifted right and maximises the probability of each next",
            "reference piece (teacher forcing: all positions at once, the mask keeps the future out);",
            "label smoothing moves ε of the target mass onto every piece.",
        ),
        formula="loss = −Σ_t Σ_v q(v) log p(v | y_<t, x),  q = (1 − ε) one-hot + ε / V",
        toy=toys.training,
        toy_source="001 (Training)",
        toy_by=TT,
        sentences=(SHORT_SENTENCE, SHORT_REFERENCE),
        takes=PAIR,
        live=live.training,
        opens=Opening("reference"),
        look="Look at each reference piece's probability and rank: what the loss pushes up.",
    ),
    Step(
        key="optimizer",
        title="Adam and the learning-rate schedule",
        idea=(
            "The paper trains with Adam, β1 = 0.9, β2 = 0.98, ε = 1e-9: each weight moves by its gradient's",
            "running mean over the root of its running square, so the step size is set by the learning",
            "rate, not by the gradient's scale. The rate rises linearly for warm-up steps, then decays as",
            "step^-0.5. Live: the curve of the run that made this model, from its card.",
        ),
        formula="lrate = scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)",
        toy=topic_toys.adam,
        toy_source="§5.3 of the paper, 001 (The learning rate schedule)",
        toy_by=TT,
        sentences=(SHORT_SENTENCE, SHORT_REFERENCE),
        takes=PAIR,
        live=live_topics.optimizer,
        opens=Opening("reference"),
        look="Look at the curve: up for the warm-up steps, peaking at the end of warm-up, then slowly down.",
        slips=(slips.PEAK_LR,),
    ),
    Step(
        key="beam",
        title="Beam search",
        idea=(
            "Greedy decoding keeps the single best piece at each step; beam search keeps the k best partial",
            "translations and ranks finished ones by log-probability over a length penalty.",
        ),
        formula="score(Y) = log p(Y | X) / ((5 + |Y|) / 6)^α",
        toy=toys.beam,
        toy_source="000 (Beam score)",
        toy_by=TT,
        sentences=(ALIGNMENT_SENTENCE,),
        live=live.beam,
        opens=Opening("beam", mode="beam"),
        look="Look at the finished hypotheses: ranked by score = log p / lp, the best first.",
    ),
    Step(
        key="bleu",
        title="Measuring a translation: BLEU",
        idea=(
            "BLEU counts the output's 1- to 4-grams found in a reference, takes the geometric mean of the",
            "four precisions and multiplies by a brevity penalty for outputs shorter than the reference.",
            "The paper reports corpus BLEU on newstest2014: 28.4 English→German, 41.0 English→French (big",
            "model; 41.8 in its later revision). One sentence's BLEU is noisy; a test set's is what a card reports.",
        ),
        formula="BLEU = BP · exp(¼ Σ_n log p_n),  BP = min(1, e^{1 − r/c})",
        toy=topic_toys.bleu,
        toy_source="§6.1 of the paper",
        toy_by=TT,
        sentences=(SHORT_SENTENCE, SHORT_REFERENCE),
        takes=PAIR,
        live=live_topics.bleu,
        opens=Opening("reference"),
        look="Look at the precisions: each word unlike the reference costs an n-gram of every order.",
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


def render_plain(s: Step, lines: Lines | None = None) -> str:
    """One step as plain text: title, idea, formula, the notes' toy on tt's code, the live numbers, the slips."""
    number = [x.key for x in STEPS].index(s.key) + 1  # `s` may be a step on the learner's own sentence
    out = [f"Step {number}/{len(STEPS)}: {s.title}", "", *s.idea, "", f"    {s.formula}"]
    if s.toy is not None:
        out += ["", toy_heading(s)]
        out += [f"  {label}: {value}" for label, value in s.toy()]
    if lines:
        out += ["", f"On the live model ({s.sentence_line}):"]
        if s.look:
            out.append(f"  {s.look}")
        out += [f"  {label}: {value}" for label, value in lines]
    for slip in s.slips:
        out += ["", f"Where a note is wrong — {slip.note}:", f"  it says: {slip.says}", f"  right: {slip.right}"]
        out += [f"  why: {slip.why}"]
    out.append(f"\nView: {s.opens.name}")
    return "\n".join(out) + "\n"
