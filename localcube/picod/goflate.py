"""Go's compress/flate at BestSpeed for a stream of fewer than 128 bytes, byte for byte.

Upstream's gzip middleware compresses at BestSpeed, whose encoder (encSpeed in Go's
compress/flate/deflate.go) writes a stream of under 128 bytes in one block when the writer is
closed: up to 16 bytes stored, more as a Huffman-only block (writeBlockHuff in
huffman_bit_writer.go), or stored when that saves less than a sixteenth; then the final empty
stored block. Answers that short are most of PicoD's refusals, so localcube sends Go's exact
bytes (and Content-Length) for them; a longer stream goes through zlib, whose bytes differ
from Go's but decode to the same.
"""

from __future__ import annotations

SMALL_LIMIT = 128  # encSpeed's "Handle small sizes"
_STORED_LIMIT = 16
_END_BLOCK = 256
_MAX_BITS = 15
_CODEGEN_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)
_BAD_CODE = 255


class _BitWriter:
    """Deflate's bit order: least significant bit first."""

    def __init__(self) -> None:
        self.out = bytearray()
        self._bits = 0
        self._count = 0

    def bits(self, value: int, count: int) -> None:
        self._bits |= value << self._count
        self._count += count
        while self._count >= 8:
            self.out.append(self._bits & 0xFF)
            self._bits >>= 8
            self._count -= 8

    def flush(self) -> None:
        """Pad to a byte boundary."""
        if self._count:
            self.out.append(self._bits & 0xFF)
        self._bits = self._count = 0

    def stored_header(self, length: int, final: bool) -> None:
        self.bits(int(final), 3)
        self.flush()
        self.bits(length, 16)
        self.bits(length ^ 0xFFFF, 16)


def _bit_counts(nodes: list[tuple[int, int]], max_bits: int) -> list[int]:
    """Go's huffmanEncoder.bitCounts: how many literals get each code length (a boundary
    package-merge); `nodes` are (literal, freq) sorted by frequency, then literal."""
    most = 1 << 31
    count = len(nodes)
    freqs = [f for _, f in nodes] + [most]
    max_bits = min(max_bits, count - 1)
    last, next_char, next_pair, needed = {}, {}, {}, {}
    leaf = [[0] * (max_bits + 1) for _ in range(max_bits + 1)]
    for level in range(1, max_bits + 1):
        last[level], next_char[level] = freqs[1], freqs[2]
        next_pair[level] = most if level == 1 else freqs[0] + freqs[1]
        needed[level] = 0
        leaf[level][level] = 2
    needed[max_bits] = 2 * count - 4
    level = max_bits
    while True:
        if next_pair[level] == most and next_char[level] == most:
            needed[level] = 0
            next_pair[level + 1] = most
            level += 1
            continue
        previous = last[level]
        if next_char[level] < next_pair[level]:
            leaves = leaf[level][level] + 1
            last[level] = next_char[level]
            leaf[level][level] = leaves
            next_char[level] = freqs[leaves]
        else:
            last[level] = next_pair[level]
            leaf[level][:level] = leaf[level - 1][:level]
            needed[level - 1] = 2
        needed[level] -= 1
        if needed[level] == 0:
            if level == max_bits:
                break
            next_pair[level + 1] = previous + last[level]
            level += 1
        else:
            while needed.get(level - 1, 0) > 0:
                level -= 1
    counts = leaf[max_bits]
    bit_count = [0] * (max_bits + 1)
    for bits, level in enumerate(range(max_bits, 0, -1), start=1):
        bit_count[bits] = counts[level] - counts[level - 1]
    return bit_count


def _reverse(code: int, length: int) -> int:
    return int(f"{code:0{length}b}"[::-1], 2)


def _huffman(freqs: list[int], max_bits: int) -> list[tuple[int, int]]:
    """Go's huffmanEncoder.generate: (bit-reversed code, length) per symbol, (0, 0) unused."""
    codes = [(0, 0)] * len(freqs)
    nodes = [(symbol, f) for symbol, f in enumerate(freqs) if f]
    if len(nodes) <= 2:
        for index, (symbol, _) in enumerate(nodes):
            codes[symbol] = (index, 1)
        return codes
    nodes.sort(key=lambda node: (node[1], node[0]))
    code = 0
    for length, bits in enumerate(_bit_counts(nodes, max_bits)):
        code <<= 1
        if length == 0 or bits == 0:
            continue
        chunk, nodes = sorted(nodes[len(nodes) - bits :]), nodes[: len(nodes) - bits]
        for symbol, _ in chunk:
            codes[symbol] = (_reverse(code, length), length)
            code += 1
    return codes


def _codegen(lengths: list[int]) -> tuple[list[int], list[int]]:
    """Go's generateCodegen: the run-length coded code lengths, and each code's frequency."""
    freq = [0] * 19
    out: list[int] = []
    sizes = [*lengths, _BAD_CODE]
    size, count = sizes[0], 1
    for next_size in sizes[1:]:
        if next_size == size:
            count += 1
            continue
        if size != 0:
            out.append(size)
            freq[size] += 1
            count -= 1
            while count >= 3:
                n = min(6, count)
                out += [16, n - 3]
                freq[16] += 1
                count -= n
        else:
            while count >= 11:
                n = min(138, count)
                out += [18, n - 11]
                freq[18] += 1
                count -= n
            if count >= 3:
                out += [17, count - 3]
                freq[17] += 1
                count = 0
        out += [size] * count
        freq[size] += count
        size, count = next_size, 1
    return out, freq


def _huffman_only(data: bytes, writer: _BitWriter) -> None:
    """writeBlockHuff (not final): every byte a literal, or a stored block if that is
    about as small."""
    freq = [0] * (_END_BLOCK + 1)
    for byte in data:
        freq[byte] += 1
    freq[_END_BLOCK] = 1
    literals = _huffman(freq, _MAX_BITS)
    lengths = [length for _, length in literals] + [1]  # one offset code, of length 1
    codegen, codegen_freq = _codegen(lengths)
    codegen_codes = _huffman(codegen_freq, 7)
    used = 19
    while used > 4 and codegen_freq[_CODEGEN_ORDER[used - 1]] == 0:
        used -= 1
    size = (
        3
        + 5
        + 5
        + 4
        + 3 * used
        + sum(f * codegen_codes[i][1] for i, f in enumerate(codegen_freq))
        + codegen_freq[16] * 2
        + codegen_freq[17] * 3
        + codegen_freq[18] * 7
        + sum(f * literals[i][1] for i, f in enumerate(freq))
        + 1  # the offset code, used once
    )
    if (len(data) + 5) * 8 < size + (size >> 4):
        writer.stored_header(len(data), final=False)
        writer.flush()
        writer.out += data
        return
    writer.bits(4, 3)  # dynamic Huffman, not final
    writer.bits(len(freq) - 257, 5)
    writer.bits(0, 5)  # one offset code
    writer.bits(used - 4, 4)
    for symbol in _CODEGEN_ORDER[:used]:
        writer.bits(codegen_codes[symbol][1], 3)
    items = iter(codegen)
    for symbol in items:
        writer.bits(*codegen_codes[symbol])
        if symbol in (16, 17, 18):
            writer.bits(next(items), {16: 2, 17: 3, 18: 7}[symbol])
    for byte in data:
        writer.bits(*literals[byte])
    writer.bits(*literals[_END_BLOCK])


def deflate_small(data: bytes) -> bytes:
    """The raw deflate stream Go's BestSpeed writer produces for `data` (under 128 bytes)
    written, then closed."""
    if len(data) >= SMALL_LIMIT:
        raise ValueError(f"deflate_small takes under {SMALL_LIMIT} bytes, not {len(data)}")
    writer = _BitWriter()
    if 0 < len(data) <= _STORED_LIMIT:
        writer.stored_header(len(data), final=False)
        writer.out += data
    elif data:
        _huffman_only(data, writer)
    writer.stored_header(0, final=True)
    writer.flush()
    return bytes(writer.out)
