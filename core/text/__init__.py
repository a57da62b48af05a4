"""Real text in, real text out: what happens to a user's text before and after the model.

    split.py       sentences of a line, the line's own spacing kept
    spans.py       what to copy: phones, dates, amounts, versions, paths, URLs, e-mail, code, numbers, names …
    protect.py     those spans → placeholders the model copies → back
    markup.py      Markdown/HTML block markup kept out of the text, inline emphasis projected on the output
    place.py       a span the model dropped put back where the word alignment says
    checks.py      every output checked: final punctuation, length, unaligned words, empty, language
    results.py     SentenceResult, TextResult: the records every view writes
    case.py        ALL-CAPS and Title Case translated through their natural case
    accents.py     French typed without accents given them back, from the model's own vocabulary
    confidence.py  sentence confidence, source coverage, word confidences
    glossary.py    terms.tsv
    documents.py   srt, Markdown and plain text → segments to translate + a template → the document
    options.py     TextOptions (what the pipeline is asked to do) and the placeholder schemes
    pipeline.py    translate_text(lines, translate_batch, options): all of it around any translator

Pure functions over strings; nothing here imports typer, rich, textual or tt_cli, nor the model:
the translator is a callable handed in. docs/text.md has the measurements behind each choice.
"""
