"""A joint French+English SentencePiece model with tt's fixed special ids (pad 0, unk 1, bos 2, eos 3)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from pathlib import Path

from core.errors import TokenizerError
from core.model.config import BOS_ID, EOS_ID, PAD_ID, UNK_ID


class Tokenizer:
    """Text <-> piece ids. Construct with `Tokenizer.load(path)`, `from_bytes` or `train`."""

    def __init__(self, model_proto: bytes) -> None:
        import sentencepiece as spm

        self.proto = model_proto
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.LoadFromSerializedProto(model_proto)
        except (RuntimeError, OSError, TypeError) as exc:
            raise TokenizerError(f"not a valid SentencePiece model ({exc})") from None
        ids = (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id())
        if ids != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise TokenizerError(f"SentencePiece model has special ids pad/unk/bos/eos={ids}, tt needs (0, 1, 2, 3)")

    @classmethod
    def load(cls, path: str | Path) -> Tokenizer:
        path = Path(path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise TokenizerError(f"{path}: SentencePiece model not found") from None
        except OSError as exc:
            raise TokenizerError(f"{path}: cannot read ({exc.strerror})") from None
        try:
            return cls(data)
        except TokenizerError as exc:
            raise TokenizerError(f"{path}: {exc}") from None

    @classmethod
    def train(
        cls,
        sentences: Iterable[str],
        vocab_size: int = 8000,
        *,
        model_type: str = "unigram",
        max_sentences: int = 2_000_000,
        byte_fallback: bool = False,
        user_symbols: tuple[str, ...] = (),
    ) -> Tokenizer:
        """Train on raw sentences (both languages together, so the vocabulary can be shared). byte_fallback: a
        character the vocabulary lacks is written as its UTF-8 bytes (256 pieces of the vocabulary) instead
        of <unk>, so the model can copy it and no character is lost. user_symbols: pieces always kept whole
        (the placeholders of core/data/placeholders.py), right after the special ids."""
        import sentencepiece as spm

        buffer = io.BytesIO()

        def nonempty() -> Iterator[str]:
            for s in sentences:
                s = s.strip()
                if s:
                    yield s

        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=nonempty(),
                model_writer=buffer,
                vocab_size=vocab_size,
                model_type=model_type,
                character_coverage=1.0,
                pad_id=PAD_ID,
                unk_id=UNK_ID,
                bos_id=BOS_ID,
                eos_id=EOS_ID,
                pad_piece="<pad>",
                unk_piece="<unk>",
                bos_piece="<s>",
                eos_piece="</s>",
                input_sentence_size=max_sentences,
                shuffle_input_sentence=True,
                num_threads=2,
                minloglevel=2,
                hard_vocab_limit=False,
                byte_fallback=byte_fallback,
                user_defined_symbols=list(user_symbols),
            )
        except RuntimeError as exc:
            raise TokenizerError(f"SentencePiece training failed: {exc}") from None
        return cls(buffer.getvalue())

    def with_pieces(self, pieces: Iterable[str]) -> Tokenizer:
        """This vocabulary with each of `pieces` it lacks appended as a user-defined symbol (always one piece,
        never split): every existing id keeps its piece, so a model trained on this vocabulary keeps its
        embeddings and grows rows for the new ids (core.model.grow.grow_vocab). Itself when nothing is missing."""
        from sentencepiece import sentencepiece_model_pb2 as model_pb2

        missing = [p for p in dict.fromkeys(pieces) if self.sp.piece_to_id(p) == UNK_ID and p != "<unk>"]
        if not missing:
            return self
        proto = model_pb2.ModelProto()
        proto.ParseFromString(self.proto)
        for piece in missing:
            proto.pieces.append(
                model_pb2.ModelProto.SentencePiece(
                    piece=piece, score=0.0, type=model_pb2.ModelProto.SentencePiece.USER_DEFINED
                )
            )
        return Tokenizer(proto.SerializeToString())

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.proto)

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str) -> list[int]:
        """Piece ids of `text`, without BOS/EOS."""
        return self.sp.encode(text)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return self.sp.encode(texts)

    def decode(self, ids: Iterable[int]) -> str:
        return self.sp.decode([i for i in ids if i not in (PAD_ID, BOS_ID, EOS_ID)])

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.sp.id_to_piece(i) for i in ids]

    def piece_id(self, piece: str) -> int:
        return self.sp.piece_to_id(piece)

    def scored_pieces(self) -> list[tuple[str, float]]:
        """Every piece with its unigram log-probability (SentencePiece's score), by id."""
        return [(self.sp.id_to_piece(i), self.sp.get_score(i)) for i in range(self.sp.get_piece_size())]

    def encode_pieces(self, text: str) -> list[str]:
        return self.sp.encode(text, out_type=str)
