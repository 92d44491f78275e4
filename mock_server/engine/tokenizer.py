"""A real byte-level tokenizer of the mock vocabulary.

Ids 0..255 are the 256 bytes in GPT-2/Qwen byte-alphabet order (so 198 is "\\n" and 220 is
" ", as in Qwen). Ids from 256 up to the first special id are multi-byte pieces: a few fixed
Qwen ids (872 "user", 8948 "system", 77091 "assistant", 271 "\\n\\n"), otherwise short letter
words with or without a leading space, and every 16th piece a CJK character or a fragment of
one, so generated text splits multi-byte UTF-8 characters across tokens like a real BPE.

Specials: with a vocabulary of at least 151646 ids they sit where Qwen has them (151643
`<|endoftext|>`, 151644 `<|im_start|>`, 151645 `<|im_end|>` = EOS) and every id above is a
special `<|extra_N|>`; with a smaller `--mock-vocab-size` the three specials are the last three
ids (V-3, V-2, V-1) and there are no extras.
"""

from __future__ import annotations

import codecs
import itertools
from collections.abc import Iterator
from functools import cached_property

QWEN_SPECIAL_BASE = 151643
_LETTERS = "etaoinshrdlcumwfgypbvkjxqz"
_NAMED: dict[int, bytes] = {271: b"\n\n", 872: b"user", 8948: b"system", 77091: b"assistant"}


def _byte_order() -> list[int]:
    """GPT-2's bytes_to_unicode order: printable bytes first, then the rest."""
    first = list(range(ord("!"), ord("~") + 1))
    first += list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    rest = [b for b in range(256) if b not in first]
    return first + rest


_BYTE_OF_ID = _byte_order()


def _word(k: int) -> str:
    """The k-th letter word of length >= 2 in a bijective base-26 order."""
    length = 2
    while k >= 26**length:
        k -= 26**length
        length += 1
    chars = []
    for _ in range(length):
        k, digit = divmod(k, 26)
        chars.append(_LETTERS[digit])
    return "".join(reversed(chars))


def _generated_piece(token_id: int) -> bytes:
    j = token_id - 256
    if j % 16 == 15:
        q = j // 16
        char = chr(0x4E00 + (q * 7919) % 20000).encode("utf-8")
        kind = q % 3
        return char if kind == 0 else (char[:2] if kind == 1 else char[1:])
    k = j - j // 16
    word = _word(k // 2)
    return (" " + word if k % 2 else word).encode("ascii")


def _words() -> Iterator[str]:
    """Every letter word of length >= 2, in `_word`'s order (the k-th one is `_word(k)`)."""
    for length in itertools.count(2):
        for chars in itertools.product(_LETTERS, repeat=length):
            yield "".join(chars)


def _generated_pieces(count: int) -> Iterator[bytes]:
    """`_generated_piece` of ids 256, 257, ... (count of them), built in one pass: the encoding
    table needs all ~150k, and every mock process builds it (per id, it cost 0.25 CPU-s)."""
    words = _words()
    word = ""
    for j in range(count):
        if j % 16 == 15:
            yield _generated_piece(j + 256)
        elif (j - j // 16) % 2 == 0:
            word = next(words)
            yield word.encode("ascii")
        else:
            yield b" " + word.encode("ascii")


class Tokenizer:
    """Decoding is computed per id; the encoding table is built on first use."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        if vocab_size >= QWEN_SPECIAL_BASE + 3:
            self.first_special = QWEN_SPECIAL_BASE
        else:
            self.first_special = vocab_size - 3
        self.endoftext_id = self.first_special
        self.im_start_id = self.first_special + 1
        self.eos_id = self.first_special + 2

    def is_special(self, token_id: int) -> bool:
        return token_id >= self.first_special

    def special_text(self, token_id: int) -> str:
        offset = token_id - self.first_special
        if offset < 3:
            return ("<|endoftext|>", "<|im_start|>", "<|im_end|>")[offset]
        return f"<|extra_{offset - 3}|>"

    def piece(self, token_id: int) -> bytes:
        """The raw bytes of one token (special tokens: their text)."""
        if token_id < 256:
            return bytes((_BYTE_OF_ID[token_id],))
        if token_id >= self.first_special:
            return self.special_text(token_id).encode("ascii")
        named = _NAMED.get(token_id)
        return named if named is not None else _generated_piece(token_id)

    def token_text(self, token_id: int) -> str:
        """What logprobs show for one token: its bytes decoded alone (U+FFFD if partial)."""
        return self.piece(token_id).decode("utf-8", errors="replace")

    def decode(self, token_ids: list[int], skip_special_tokens: bool = True) -> str:
        out = bytearray()
        for t in token_ids:
            if self.is_special(t) and skip_special_tokens:
                continue
            out += self.piece(t)
        return out.decode("utf-8", errors="replace")

    @cached_property
    def _table(self) -> tuple[dict[bytes, int], int]:
        table: dict[bytes, int] = {}
        for token_id in range(256):
            table.setdefault(self.piece(token_id), token_id)  # lowest id wins on duplicates
        pieces = _generated_pieces(self.first_special - 256)
        for token_id, piece in enumerate(pieces, 256):
            table.setdefault(_NAMED.get(token_id, piece), token_id)
        for token_id, piece in _NAMED.items():
            if token_id < self.first_special:
                table[piece] = token_id
        return table, max(len(p) for p in table)

    def encode(self, text: str) -> list[int]:
        """Greedy longest match; special-token text is matched as the special id."""
        specials = {self.special_text(i): i for i in range(self.first_special, self.eos_id + 1)}
        ids: list[int] = []
        rest = text
        while rest:
            found = [(rest.find(s), s) for s in specials if s in rest]
            if not found:
                ids += self._encode_plain(rest.encode("utf-8"))
                break
            at, special = min(found)
            ids += self._encode_plain(rest[:at].encode("utf-8"))
            ids.append(specials[special])
            rest = rest[at + len(special) :]
        return ids

    def _encode_plain(self, data: bytes) -> list[int]:
        table, longest = self._table
        ids: list[int] = []
        i = 0
        while i < len(data):
            for size in range(min(longest, len(data) - i), 0, -1):
                token_id = table.get(data[i : i + size])
                if token_id is not None:
                    ids.append(token_id)
                    i += size
                    break
        return ids


class IncrementalDetokenizer:
    """Text deltas as tokens arrive, holding back incomplete UTF-8 and possible stop strings.

    Mirrors vLLM: with stop strings (and without include_stop_str_in_output) the last
    `max(len(stop)) - 1` characters are held back until the request finishes.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        stop: list[str],
        include_stop: bool,
        skip_special_tokens: bool,
        cut_stop: bool = True,
    ) -> None:
        self._tok = tokenizer
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stop = stop
        self._include_stop = include_stop
        self._skip_special = skip_special_tokens
        self._cut_stop = cut_stop
        self._hold = max((len(s) for s in stop), default=1) - 1 if not include_stop else 0
        self.text = ""
        self._sent = 0
        self.stopped_by: str | None = None

    def add(self, token_id: int) -> str | None:
        """Feed one token; returns the matched stop string if generation must stop."""
        if not (self._tok.is_special(token_id) and self._skip_special):
            prev_len = len(self.text)
            self.text += self._decoder.decode(self._tok.piece(token_id))
            if self._stop:
                start = max(0, prev_len - max(len(s) for s in self._stop) + 1)
                for s in self._stop:
                    idx = self.text.find(s, start)
                    if idx >= 0:
                        end = idx + len(s) if (self._include_stop or not self._cut_stop) else idx
                        self.text = self.text[:end]
                        self.stopped_by = s
                        return s
        return None

    @property
    def emitted(self) -> str:
        """The text every delta so far adds up to."""
        return self.text[: self._sent]

    def delta(self, final: bool) -> str:
        """New text since the last call; `final` flushes what was held back."""
        if final and self.stopped_by is None:
            self.text += self._decoder.decode(b"", final=True)
        limit = len(self.text) if final else max(self._sent, len(self.text) - self._hold)
        out = self.text[self._sent : limit]
        self._sent = limit
        return out
