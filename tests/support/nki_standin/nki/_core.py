"""The strict stand-in's core (tests only): tensors, memory, and the check of every call against the documented
signature.

Signatures come from tests/support/nki_api/signatures.json, extracted from the API stub files of the Neuron SDK
documentation (nki/api/nki/*), not from the exporter's templates: a call with a keyword the documentation does
not have, a missing required argument, or a function the documentation does not list fails. The rules each
instruction checks are quoted from the same stubs' docstrings (see isa.py)."""
import functools
import inspect
import json
import os

import numpy as np

_SIGNATURES = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "nki_api", "signatures.json")))

PARTITIONS = 128
PSUM_BANK_BYTES = 2048  # per partition: nl.tile_size.psum_bank_fmax_bytes
PSUM_BANKS = 8  # nl.tile_size.psum_num_banks
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int32": 4, "uint32": 4, "uint8": 1, "int8": 1,
               "uint16": 2, "int16": 2, "tfloat32": 4, "bool_": 1}
ON_CHIP = ("sbuf", "psum")

traced_instructions = [0]  # nki.isa instructions executed since the last reset, for tests


class NkiRuleError(Exception):
    """A call that the documented API rejects."""


def fail(function, message):
    raise NkiRuleError(f"{function}: {message}")


def nc_version():
    """The NeuronCore generation the kernel is checked for, from NEURON_PLATFORM_TARGET_OVERRIDE as the SDK reads
    it (trn1|gen2, trn2|gen3, trn3|gen4); trn2 when unset."""
    target = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")
    return {"trn1": 2, "inf2": 2, "gen2": 2, "trn2": 3, "gen3": 3, "trn3": 4, "gen4": 4}[target]


class _Allocation:
    """One nl.ndarray's storage: float32 values (NaN until written), its dtype and buffer, and for PSUM which
    elements an nc_matmul initialised (accumulate=True needs them) and the first bank it starts on."""

    def __init__(self, shape, dtype, buffer, name):
        self.values = np.full(tuple(shape), np.nan, dtype=np.float32)
        self.dtype, self.buffer, self.name = dtype, buffer, name
        self.matmul_written = np.zeros(tuple(shape), dtype=bool) if buffer == "psum" else None


class Tensor:
    """nl.NkiTensor: a view (numpy basic indexing) of one allocation. No item assignment, no arithmetic, no truth
    value: a kernel writes through nki.isa instructions' dst and cannot branch on data at trace time."""

    def __init__(self, allocation, values, flags=None):
        self._allocation, self._values = allocation, values
        self._flags = flags

    shape = property(lambda self: tuple(self._values.shape))
    ndim = property(lambda self: self._values.ndim)
    size = property(lambda self: int(self._values.size))
    dtype = property(lambda self: self._allocation.dtype)
    buffer = property(lambda self: self._allocation.buffer)
    name = property(lambda self: self._allocation.name)

    def on_chip(self):
        return self.buffer in ON_CHIP

    def _view(self, values, flags):
        return Tensor(self._allocation, values, flags)

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if any(k is Ellipsis for k in key):
            at = key.index(Ellipsis)
            key = key[:at] + (slice(None),) * (self.ndim - len(key) + 1) + key[at + 1:]
        if len(key) > self.ndim:
            fail("NkiTensor.__getitem__", f"{len(key)} indices for a tensor of shape {self.shape}")
        normal = []
        for axis, k in enumerate(key):
            size = self.shape[axis]
            if isinstance(k, slice):
                start, stop, step = k.start or 0, size if k.stop is None else k.stop, k.step or 1
                if not all(isinstance(v, (int, np.integer)) for v in (start, stop, step)) or step <= 0 or \
                        not 0 <= start < stop <= size:
                    fail("NkiTensor.__getitem__", f"slice {start}:{stop}:{step} of axis {axis} (size {size}) of "
                                                  f"'{self.name}' is empty or out of bounds")
                normal.append(slice(start, stop, step))
            elif isinstance(k, (int, np.integer)):
                if not 0 <= k < size:
                    fail("NkiTensor.__getitem__", f"index {k} of axis {axis} (size {size}) is out of bounds")
                # On-chip tensors keep the partition axis: an integer there is a size-1 slice.
                normal.append(slice(k, k + 1) if axis == 0 and self.on_chip() else int(k))
            else:
                fail("NkiTensor.__getitem__", f"index {k!r}: only integers and slices are accepted")
        key = tuple(normal)
        return self._view(self._values[key], None if self._flags is None else self._flags[key])

    def reshape(self, shape):
        shape = tuple(shape)
        if int(np.prod(shape)) != self.size:
            fail("NkiTensor.reshape", f"{self.shape} to {shape} changes the element count")
        if self.on_chip() and shape[0] != self.shape[0]:
            fail("NkiTensor.reshape", f"{self.shape} to {shape} changes the partition dimension")
        values = self._values.view()
        try:
            values.shape = shape  # raises where the view's strides cannot express the new shape without a copy
        except AttributeError:
            fail("NkiTensor.reshape", f"{self.shape} to {shape} is not expressible as a view of '{self.name}'")
        flags = None
        if self._flags is not None:
            flags = self._flags.view()
            flags.shape = shape
        return self._view(values, flags)

    def permute(self, dims):
        dims = tuple(dims)
        if sorted(dims) != list(range(self.ndim)) or (self.on_chip() and dims[0] != 0):
            fail("NkiTensor.permute", f"dims {dims} for shape {self.shape} ({self.buffer})")
        return self._view(self._values.transpose(dims), None if self._flags is None else self._flags.transpose(dims))

    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim=0, dtype=None):
        """'Low-level access pattern override ... an explicit [[stride, count], ...] pattern addressing the
        underlying storage directly. Analogous to torch.as_strided.' The stand-in takes static patterns only
        (no indirection, no reinterpreting dtype); on chip the first pair walks the partitions, one partition's
        elements apart (the documented example: a (128, 32) tile's pattern [[32, 128], [1, 32]]). A pattern
        with a zero stride reads the same element repeatedly (a broadcast) and cannot be written."""
        f = "NkiTensor.ap"
        if scalar_offset is not None or vector_offset is not None or indirect_dim != 0 or dtype is not None:
            fail(f, "the stand-in takes static patterns only (pattern, offset)")
        pattern = [list(p) for p in pattern]
        if not pattern or any(len(p) != 2 or not all(isinstance(v, (int, np.integer)) for v in p) or p[0] < 0
                              or p[1] <= 0 for p in pattern):
            fail(f, f"pattern {pattern}: [stride, count] pairs of non-negative strides and positive counts")
        base = self._allocation.values
        flat = base.reshape(-1)
        row = base[0].size if base.ndim > 1 else 1
        start = (self._values.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 4
        start += offset or 0
        if self.on_chip() and (pattern[0][0] != row or pattern[0][1] > PARTITIONS):
            fail(f, f"pattern {pattern} on '{self.name}': the first pair must walk up to {PARTITIONS} partitions "
                    f"with stride {row} (the elements of one partition)")
        last = start + sum(stride * (count - 1) for stride, count in pattern)
        if start < 0 or last >= flat.size:
            fail(f, f"pattern {pattern} at offset {start} reads past '{self.name}' ({flat.size} elements)")
        values = np.lib.stride_tricks.as_strided(flat[start:], shape=tuple(c for _, c in pattern),
                                                 strides=tuple(s * flat.itemsize for s, _ in pattern),
                                                 writeable=not any(s == 0 for s, _ in pattern))
        return self._view(values, None)

    def __setitem__(self, key, value):
        raise TypeError("NkiTensor takes no item assignment: write through an nki.isa instruction's dst")

    def __bool__(self):
        raise TypeError("an NkiTensor has no truth value at trace time: no Python control flow on tile values")

    def __iter__(self):
        raise TypeError("an NkiTensor is not iterable")

    def __array__(self, *args, **kwargs):
        raise TypeError("an NkiTensor is not a numpy array inside a kernel")

    def __repr__(self):
        return f"NkiTensor({self.name!r}, {self.shape}, {self.dtype}, {self.buffer})"

    # For the stand-in's instructions.
    def read(self):
        return self._values.astype(np.float32)

    def write(self, values):
        self._values[...] = np.broadcast_to(np.asarray(values, dtype=np.float32), self._values.shape)
        if self._flags is not None:
            self._flags[...] = False

    def per_partition(self):
        return self.size // self.shape[0] if self.shape else 1

    def first_partition(self):
        """The partition the view starts at in its on-chip allocation."""
        base = self._allocation.values
        return (self._values.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // base.strides[0]

    def psum_bank_span(self):
        """The PSUM banks (per partition) the view's elements lie in, allocations starting on a bank."""
        base = self._allocation.values
        itemsize = DTYPE_BYTES[self.dtype]
        row_elems = base[0].size if base.ndim else 1
        start = (self._values.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 4
        offsets = [start % row_elems]
        last = start
        for extent, stride in zip(self._values.shape[1:], self._values.strides[1:]):
            last += (extent - 1) * stride // 4
        offsets.append(last % row_elems)
        return offsets[0] * itemsize // PSUM_BANK_BYTES, offsets[1] * itemsize // PSUM_BANK_BYTES


def documented(module):
    """Binds every call against the documented signature of `module`.`function`, and checks at import that the
    stand-in's own parameters are the documented ones (same names, same order), so a check can neither accept a
    keyword the documentation lacks nor ignore one it has."""

    def wrap(impl):
        name = impl.__name__
        if name not in _SIGNATURES[module]:
            raise AssertionError(f"the stand-in defines {module}.{name}, which the NKI documentation does not have")
        spec = _SIGNATURES[module][name]
        prefix = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
        own = [prefix.get(p.kind, "") + p.name for p in inspect.signature(impl).parameters.values()]
        doc_names = [p["name"] for p in spec]
        if own != doc_names:
            raise AssertionError(f"stand-in {module}.{name}{tuple(own)} differs from the documented {tuple(doc_names)}")

        @functools.wraps(impl)
        def call(*args, **kwargs):
            namespace = vars(inspect.getmodule(impl))
            params = []
            for p in spec:
                kind = inspect.Parameter.KEYWORD_ONLY if p.get("keyword_only") else \
                    inspect.Parameter.POSITIONAL_OR_KEYWORD
                if p["name"].startswith("**"):
                    params.append(inspect.Parameter(p["name"][2:], inspect.Parameter.VAR_KEYWORD))
                    continue
                default = inspect.Parameter.empty if p["default"] is None else eval(p["default"], namespace)
                params.append(inspect.Parameter(p["name"], kind, default=default))
            try:
                bound = inspect.Signature(params).bind(*args, **kwargs)
            except TypeError as error:
                raise TypeError(f"{module}.{name}: {error} (documented: {name}({', '.join(doc_names)}))") from None
            bound.apply_defaults()
            if module == "nki.isa":
                traced_instructions[0] += 1
            return impl(*bound.args, **bound.kwargs)

        return call

    return wrap
