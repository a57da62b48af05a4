"""core.decode.translate: streaming, order, bad input, the attention trace and word alignment (tiny real model)."""

from __future__ import annotations

import io
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.align.links import align_words, words
from core.decode.search import greedy, pad_batch
from core.decode.source import clean_text, prepare_source
from core.decode.trace import attention_matrix, trace_steps
from core.decode.translate import TranslateOptions, read_lines, translate_lines
from core.errors import ConfigError, DataError, TTError
from tests.conftest import TINY_TSV

GREEDY = TranslateOptions(method="greedy")
SOURCES = [line.split("\t")[0] for line in TINY_TSV.read_text(encoding="utf-8").splitlines()]


def run(loaded, lines, options=GREEDY):
    return list(translate_lines(loaded, lines, options))


def test_batched_sorted_output_matches_one_at_a_time(tiny_loaded):
    # Lines of different lengths, in batches of 3 inside chunks of 12: sorting must be undone.
    lines = SOURCES[:10] + ["Je suis étudiant. Il est médecin. Tu es étudiant."] + SOURCES[10:14]
    batched = run(tiny_loaded, lines, TranslateOptions(method="greedy", batch_size=3))
    single = [run(tiny_loaded, [line])[0] for line in lines]
    assert [t.index for t in batched] == list(range(len(lines)))
    assert [t.source for t in batched] == lines
    assert [t.text for t in batched] == [t.text for t in single]
    assert batched[0].text == "I am a student."  # the fixture model learned its first pair


def test_empty_and_whitespace_lines_give_empty_translations(tiny_loaded):
    out = run(tiny_loaded, ["", "Je suis étudiant.", "   \t ", ""])
    assert [t.text for t in out] == ["", "I am a student.", "", ""]
    assert out[2].token_ids == [] and out[2].source_tokens == []


def test_streaming_reads_ahead_at_most_one_chunk(tiny_loaded):
    pulled = 0

    def lines():
        nonlocal pulled
        for i in range(1000):
            pulled += 1
            yield SOURCES[i % len(SOURCES)]

    stream = translate_lines(tiny_loaded, lines(), TranslateOptions(method="greedy", batch_size=2))
    first = next(stream)
    assert first.index == 0
    # One chunk of 4 batches in hand; the stdin reader thread keeps at most one more chunk queued
    # and one line waiting: bounded, not the whole input.
    assert 8 <= pulled <= 2 * 8 + 1


def test_over_long_line_is_truncated_with_a_warning(tiny_loaded):
    long_line = " ".join(["Je suis étudiant."] * 40)  # far past max_len=64 pieces
    (t,) = run(tiny_loaded, [long_line])
    assert t.truncated
    assert len(t.source_tokens) == tiny_loaded.cfg.max_len
    assert any("truncated" in w or "first" in w for w in t.warnings)
    assert t.text  # still translated


def test_control_characters_are_cleaned_and_output_is_one_line(tiny_loaded):
    (t,) = run(tiny_loaded, ["Je suis\x00 étudiant.\u2028\x1b[31m"])
    assert "replaced 3 control" in t.warnings[0]
    assert len(t.text.splitlines()) <= 1


def test_clean_text_keeps_ordinary_unicode():
    assert clean_text("Ça va ? 😀 中文 שלום") == ("Ça va ? 😀 中文 שלום", 0)
    assert clean_text("a\tb\x00c\x85") == ("a b c ", 2)


def test_read_lines_reports_file_and_line_of_bad_utf8():
    data = io.BytesIO(b"un\r\ndeux\nab\xffcd\n")
    lines = read_lines(data, "in.fr")
    assert next(lines) == "un"  # CRLF stripped
    assert next(lines) == "deux"
    with pytest.raises(DataError, match=r"in\.fr:3: invalid UTF-8 \(byte 0xff at column 3\)"):
        next(lines)
    assert list(read_lines(io.BytesIO(b"ab\xffcd"), "x", "replace")) == ["ab\ufffdcd"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "nucleus"}, "method must be one of beam, greedy, sample, got 'nucleus'"),
        ({"n_best": 5, "beam": 2}, "cannot exceed"),
        ({"n_best": 2, "method": "greedy"}, "needs beam"),
        ({"n_best": 2, "method": "sample"}, "needs beam"),
        ({"temperature": 0.0}, "temperature"),
        ({"top_k": -1, "top_p": 2.0}, "top-k must be 0 .* top-p must be in"),
        ({"batch_size": 0}, "batch-size"),
    ],
)
def test_bad_options_are_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        TranslateOptions(**kwargs).validate()


def test_one_beam_is_greedy_search(tiny_loaded):
    """method="beam" with beam 1 runs greedy search, and says so (tt eval reports `options.search`)."""
    one = TranslateOptions(beam=1)
    assert (one.method, one.search) == ("beam", "greedy")
    assert (
        run(tiny_loaded, ["Je suis étudiant."], one)[0].token_ids
        == run(tiny_loaded, ["Je suis étudiant."], GREEDY)[0].token_ids
    )


def test_beam_n_best_is_ranked_and_best_first(tiny_loaded):
    (t,) = run(tiny_loaded, ["Je suis étudiant."], TranslateOptions(beam=4, n_best=3))
    scores = [a.score for a in t.n_best]
    assert len(t.n_best) == 3 and scores == sorted(scores, reverse=True)
    assert t.text == t.n_best[0].text == "I am a student."
    assert len({a.text for a in t.n_best}) == 3


def test_sampling_is_reproducible_with_a_seed(tiny_loaded):
    opts = TranslateOptions(method="sample", seed=7, temperature=1.5)
    a = [t.text for t in run(tiny_loaded, SOURCES[:4], opts)]
    b = [t.text for t in run(tiny_loaded, SOURCES[:4], opts)]
    assert a == b


def test_trace_matches_what_greedy_decoding_saw(tiny_loaded):
    (t,) = run(tiny_loaded, ["Il est médecin."], TranslateOptions(method="greedy", with_attention=True))
    src = pad_batch([t.source_tokens], 0)
    (hyp,) = greedy(tiny_loaded.model, src)
    steps = t.steps
    assert [s.token for s in steps] == hyp.tokens + [tiny_loaded.cfg.eos_id]
    # Causality: the teacher-forced pass gives each step the distribution incremental decoding had.
    assert [s.logprob for s in steps] == pytest.approx(hyp.token_logprobs, abs=1e-4)
    assert all(s.candidates[0].token == s.token for s in steps)  # greedy chose the argmax
    S, cfg = len(t.source_tokens), tiny_loaded.cfg
    assert t.source_trace.pieces[-1] == "</s>" and len(t.source_trace.encoder_self) == cfg.n_encoder_layers
    for s in steps:
        assert len(s.cross) == cfg.n_decoder_layers and s.cross[0].shape == (cfg.h, S)
        assert s.decoder_self[0].shape == (cfg.h, s.index + 1)
        torch.testing.assert_close(s.cross[-1].sum(-1), torch.ones(cfg.h))
    cross = attention_matrix(t.source_trace, steps, "cross", -1, None)
    assert cross.shape == (len(steps), S)
    torch.testing.assert_close(cross, torch.stack([s.cross[-1].mean(0) for s in steps]))
    torch.testing.assert_close(
        attention_matrix(t.source_trace, steps, "cross", -1, 1), torch.stack([s.cross[-1][1] for s in steps])
    )
    # The stored candidates are the model's own distribution (temperature 1), as in the Stepper.
    assert all(abs(c.prob - math.exp(c.logprob)) < 1e-6 for s in steps for c in s.candidates)


def test_trace_of_an_empty_output_has_the_encoder_only(tiny_loaded):
    ids = prepare_source(tiny_loaded.tokenizer, "Je suis", tiny_loaded.cfg.max_len).ids
    source, steps = trace_steps(tiny_loaded, ids, [])
    assert steps == [] and source.tokens == ids and len(source.encoder_self) == tiny_loaded.cfg.n_encoder_layers


def test_trace_steps_refuses_ids_that_skipped_prepare_source(tiny_loaded):
    ids = tiny_loaded.tokenizer.encode("Je suis")
    with pytest.raises(TTError, match="prepare_source"):
        trace_steps(tiny_loaded, ids, [])  # no EOS
    with pytest.raises(TTError, match="prepare_source"):
        trace_steps(tiny_loaded, ids * 40 + [tiny_loaded.cfg.eos_id], [])  # longer than the model's positions


def test_prepare_source_is_one_rule(tiny_loaded):
    tok, eos = tiny_loaded.tokenizer, tiny_loaded.cfg.eos_id
    src = prepare_source(tok, "\t Je suis\x00étudiant. \n", max_len=64)
    assert src.ids == tok.encode("Je suis étudiant.") + [eos] and not src.truncated
    assert src.warnings == ["replaced 2 control character(s) with spaces"]
    pieces = tok.encode("Je suis étudiant. Il est médecin.")
    long = prepare_source(tok, "Je suis étudiant. Il est médecin.", max_len=5)
    assert long.ids == pieces[:4] + [eos] and long.truncated  # the head is kept, EOS last
    assert long.warnings == [f"{len(pieces)} pieces, longer than the model's 4; translated the first 4"]
    assert prepare_source(tok, " \x00 ", max_len=5).ids == []


def test_words_group_pieces_on_the_word_marker():
    pieces = ["▁Je", "▁s", "uis", "▁étudiant", ".", "</s>"]
    assert words(pieces) == [[0], [1, 2], [3, 4]]


def test_align_words_picks_the_source_word_with_most_mass():
    src = ["▁Je", "▁s", "uis", "▁étudiant", "</s>"]
    out = ["▁I", "▁am", "▁a", "▁stud", "ent", "</s>"]
    cross = torch.tensor(
        [  # rows: output pieces; columns: source pieces
            [0.7, 0.1, 0.1, 0.0, 0.1],
            [0.1, 0.3, 0.4, 0.1, 0.1],  # "suis" = 0.7 over two pieces beats "Je" at 0.1
            [0.1, 0.1, 0.1, 0.6, 0.1],
            [0.0, 0.0, 0.0, 0.9, 0.1],
            [0.0, 0.0, 0.0, 0.8, 0.2],
            [0.0, 0.0, 0.0, 0.0, 1.0],
        ]
    )
    assert align_words(src, out, cross) == [(0, 0), (1, 1), (2, 2), (2, 3)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=40), max_size=6))
def test_any_unicode_gives_one_translation_per_line(tiny_loaded, lines):
    out = run(tiny_loaded, lines, TranslateOptions(method="greedy", batch_size=2, extra_len=8))
    assert [t.index for t in out] == list(range(len(lines)))
    for t in out:
        assert len(t.text.splitlines()) <= 1
        if not clean_text(t.source)[0].strip():
            assert t.text == ""


def test_the_decoding_record_reads_the_search_limit_without_torch():
    """core.decode.method carries TranslateOptions where torch is not loaded (a warm tt translate, a request):
    its default extra length is the one every search reads (defined there, once)."""
    import inspect

    from core.decode.beam import beam_search
    from core.decode.method import EXTRA_LEN
    from core.decode.search import greedy

    for search in (greedy, beam_search):
        assert inspect.signature(search).parameters["extra_len"].default == EXTRA_LEN == TranslateOptions().extra_len
