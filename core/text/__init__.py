"""Real text in, real text out: what happens to a user's text before and after the model.

    split.py       sentences of a line, the line's own spacing kept
    protect.py     numbers, times, dates, URLs, e-mail, emoji, code, markup, unknown characters and
                   glossary terms → placeholders the model copies → back
    currency.py    12,50 € → 12,50 euros: a currency symbol against a number spelled for the model
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
