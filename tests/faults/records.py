"""Reading the binary record files the C++ tools write (tests/faults/record_log.hpp): 32-byte
records "<QQQIBBH" = t_ns, stream_seq, id, aux, kind, flags, connection. A record with t_ns == 0
ends the file (the zero tail a killed process leaves)."""

import struct
from array import array
from dataclasses import dataclass

RECORD = struct.Struct("<QQQIBBH")

# publisher kinds
ATTEMPT, STORED, FAILED, NOT_SENT = 1, 2, 3, 4
# handler kinds
DELIVERED, ACKED, NAKED, DROPPED, CONNECTED, DISCONNECTED = 1, 2, 3, 4, 5, 6


@dataclass
class Rec:
    t: int
    seq: int
    id: int
    aux: int
    kind: int
    flags: int
    conn: int


def read(path):
    """Every complete record in the file, as Rec."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    out = []
    usable = len(data) - len(data) % RECORD.size
    for t, seq, ident, aux, kind, flags, conn in RECORD.iter_unpack(memoryview(data)[:usable]):
        if t == 0:
            break
        out.append(Rec(t, seq, ident, aux, kind, flags, conn))
    return out


class Tail:
    """Follows a record file that is still being written: each poll() returns the new records."""

    def __init__(self, path):
        self.path = path
        self.offset = 0

    def poll(self):
        out = []
        try:
            with open(self.path, "rb") as f:
                while True:
                    # Small reads: the file is preallocated, and past the records there are zeros.
                    f.seek(self.offset)
                    data = f.read(RECORD.size * 256)
                    complete = 0
                    for start in range(0, len(data) - RECORD.size + 1, RECORD.size):
                        fields = RECORD.unpack_from(data, start)
                        if fields[0] == 0:
                            break
                        out.append(Rec(*fields))
                        complete += 1
                    self.offset += complete * RECORD.size
                    if complete < 256:
                        return out
        except FileNotFoundError:
            return out


def columns(path):
    """The file as four parallel arrays (t, seq, id, kind), for large files (the soak)."""
    with open(path, "rb") as f:
        data = f.read()
    words = array("Q")
    words.frombytes(data[: len(data) - len(data) % RECORD.size])
    n = len(words) // 4
    t = words[0::4]
    # find the end: the first zero time
    end = n
    if n and t[-1] == 0:
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if t[mid] == 0:
                hi = mid
            else:
                lo = mid + 1
        end = lo
    # The last word holds aux | kind << 32 | flags << 40 | connection << 48.
    return t[:end], words[1::4][:end], words[2::4][:end], words[3::4][:end]


def kind_of(last_word):
    return (last_word >> 32) & 0xFF
