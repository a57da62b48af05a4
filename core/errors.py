"""Domain errors. The CLI turns each into one line on stderr and a non-zero exit."""


class TTError(Exception):
    """Base of every error a user can cause (bad file, bad option, bad input)."""


class ConfigError(TTError):
    """A model or training configuration that cannot work."""


class CheckpointError(TTError):
    """A model directory or checkpoint that is missing, corrupt or mismatched."""


class DataError(TTError):
    """Training or evaluation data that cannot be read (file and line in the message)."""


class TokenizerError(TTError):
    """A SentencePiece model that is missing or does not fit the model."""


class DownloadError(DataError):
    """A corpus that could not be fetched, verified or written; the message names the URL or file."""


class DocumentError(DataError):
    """A document (subtitles, Markdown, a glossary) that cannot be read; the message starts with file:line."""


class OutputError(TTError):
    """An output path that cannot be written (a directory, a missing parent, a read-only file); named in the message."""


class Stopped(Exception):
    """A decode stopped part-way because its caller's `stop()` said so (a server's client hung up).
    Not a TTError: nobody made a mistake, and there is nobody to tell."""
