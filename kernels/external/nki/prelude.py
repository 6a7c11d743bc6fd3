P = nl.tile_size.pmax  # partitions: 128


class _Span(nl.NKIObject):
    """One tile of a loop: its index, first element, size (the last may be ragged), end and offset in the loop's
    range."""

    def __init__(self, index, begin, size, offset):
        self.index, self.begin, self.size, self.offset = index, begin, size, offset
        self.end = begin + size


def _tiles(extent, tile, begin=0):
    """Tiles of [begin, begin + extent), the last one ragged. These are Python loops: they unroll while the
    kernel is traced, so the compiler gets the instruction stream autotune measured."""
    return [_Span(i, begin + o, min(tile, extent - o), o) for i, o in enumerate(range(0, extent, tile))]


def _folded_row_groups(rows, fold):
    """Groups of up to P * fold rows, partition p of a group taking `fold` consecutive rows; the rows of a
    ragged last block that do not fill whole folds go one per partition. Each is (first row, partitions, fold)."""
    groups = []
    for block in _tiles(rows, P * fold):
        whole = block.size // fold
        if whole:
            groups.append((block.begin, whole, fold))
        if block.size % fold:
            groups.append((block.begin + whole * fold, block.size % fold, 1))
    return groups


def _folded(tensor, group, c0, c1):
    """Columns [c0, c1) of a row group's rows as [partitions, fold, columns]: what one DMA moves."""
    begin, parts, fold = group
    return tensor[begin:begin + parts * fold, c0:c1].reshape((parts, fold, c1 - c0))


class _Pool(nl.NKIObject):
    """`count` rotating buffers of one shape in SBUF or PSUM, handed out in turn by next(): up to `count`
    loop steps use distinct buffers, so their loads, compute and stores can overlap (the pipeline depth)."""

    def __init__(self, count, shape, dtype, buffer=nl.sbuf):
        self.buffers = [nl.ndarray(tuple(shape), dtype=dtype, buffer=buffer) for _ in range(count)]
        self.turn = 0

    def next(self):
        buffer = self.buffers[self.turn % len(self.buffers)]
        self.turn += 1
        return buffer
