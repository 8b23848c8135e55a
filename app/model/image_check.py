"""Is an image file whole? A structural check before it is attached (issue 37, item 12).

A file with an image's first bytes but broken data makes every later request fail with the same
400 (the image stays in the conversation), so it is checked here without decoding pixels: PNG
chunks and CRCs with the compressed image data inflated to the end; JPEG markers walked to the
end-of-image; GIF ending with its trailer; WebP's RIFF size and its first chunk. `problem()` says
what is wrong ("" when nothing is).
"""

from __future__ import annotations

import struct
import zlib

MAX_INFLATE = (
    512 * 1024 * 1024
)  # a PNG's inflated data is walked in pieces; past this it is not an image we send


def problem(media_type: str, data: bytes) -> str:
    try:
        if media_type == "image/png":
            return _png(data)
        if media_type == "image/jpeg":
            return _jpeg(data)
        if media_type == "image/gif":
            return (
                "" if len(data) > 13 and data.rstrip(b"\x00").endswith(b"\x3b") else "the GIF has no trailer"
            )
        if media_type == "image/webp":
            return _webp(data)
    except (struct.error, IndexError, ValueError, zlib.error) as exc:
        return f"it is damaged ({exc})"
    return ""


def _png(data: bytes) -> str:
    at = 8
    seen_header = seen_end = False
    inflater = zlib.decompressobj()
    inflated = 0
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        body = data[at + 8 : at + 8 + length]
        crc = data[at + 8 + length : at + 12 + length]
        if len(body) != length or len(crc) != 4:
            return f"the PNG is cut short in its {kind.decode('latin-1')} chunk"
        if zlib.crc32(kind + body) & 0xFFFFFFFF != struct.unpack(">I", crc)[0]:
            return f"the PNG's {kind.decode('latin-1')} chunk is damaged (bad CRC)"
        if kind == b"IHDR":
            seen_header = True
        elif kind == b"IDAT":
            inflated += len(inflater.decompress(body, 1 << 20))
            while inflater.unconsumed_tail and inflated < MAX_INFLATE:
                inflated += len(inflater.decompress(inflater.unconsumed_tail, 1 << 20))
        elif kind == b"IEND":
            seen_end = True
            break
        at += 12 + length
    if not seen_header:
        return "the PNG has no header chunk"
    if not seen_end:
        return "the PNG has no end chunk (cut short?)"
    if not inflater.eof:
        return "the PNG's image data is incomplete"
    return ""


def _jpeg(data: bytes) -> str:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return "the JPEG's markers are damaged"
        marker = data[at + 1]
        if marker == 0xD9:
            return ""
        if marker in (0x01, *range(0xD0, 0xD8)):
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if length < 2 or at + 2 + length > len(data):
            return "the JPEG is cut short"
        at += 2 + length
        if (
            marker == 0xDA
        ):  # start of scan: entropy-coded data up to the next marker that is not RSTn/stuffing
            while at + 1 < len(data):
                if data[at] == 0xFF and data[at + 1] not in (0x00, *range(0xD0, 0xD8)):
                    break
                at += 1
    return "the JPEG has no end-of-image marker (cut short?)"


def _webp(data: bytes) -> str:
    (size,) = struct.unpack("<I", data[4:8])
    if size + 8 != len(data) and size + 8 + 1 != len(data):
        return "the WebP's size does not match the file (cut short?)"
    if data[12:16] not in (b"VP8 ", b"VP8L", b"VP8X"):
        return "the WebP has no image chunk"
    return ""
