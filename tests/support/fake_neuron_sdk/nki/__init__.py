"""Stand-in for the Neuron SDK's `nki` (tests only; see ../README.md).

Kernels execute with the numpy stand-in of the NKI modules in tests/support/nki_standin: its `nki` package
when it has one (this package then serves its submodules), and its `neuronxcc.nki` for kernels in the older
style. Calling a jit kernel also leaves kernel.neff in NKI_ARTIFACTS_DIR, as the SDK's standalone path does."""
import functools
import inspect
import json
import os

_STANDIN = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "nki_standin", "nki"))
if os.path.isfile(os.path.join(_STANDIN, "__init__.py")):
    __path__.append(_STANDIN)  # noqa: F821  (nki.language, nki.isa, ... come from the stand-in)
    with open(os.path.join(_STANDIN, "__init__.py")) as _f:
        exec(compile(_f.read(), os.path.join(_STANDIN, "__init__.py"), "exec"))


def _device(jit):
    """`jit` whose kernels also write the NEFF, and return a wrong output when FAKE_NKI_WRONG=1."""
    if getattr(jit, "_fake_sdk", False):
        return jit

    def device_jit(kernel=None, **options):
        if kernel is None:
            return lambda k: device_jit(k, **options)
        compiled = jit(kernel, **options) if options else jit(kernel)

        @functools.wraps(kernel)
        def run(*args, **kwargs):
            out = compiled(*args, **kwargs)
            artifacts = os.environ.get("NKI_ARTIFACTS_DIR")
            if artifacts:
                os.makedirs(artifacts, exist_ok=True)
                names = list(inspect.signature(kernel).parameters)[:len(args)]
                with open(os.path.join(artifacts, "kernel.neff"), "w") as f:
                    json.dump({"fake_neff": True, "kernel": kernel.__name__, "inputs": names,
                               "shapes": [list(getattr(a, "shape", ())) for a in args]}, f)
            if os.environ.get("FAKE_NKI_WRONG") == "1":
                out = out + 0.5  # every element off, whichever rows a check samples
            return out

        return run

    device_jit._fake_sdk = True
    return device_jit


if "jit" in globals():
    jit = _device(globals()["jit"])
try:  # kernels in the older style import neuronxcc.nki
    import neuronxcc.nki as _older

    _older.jit = _device(_older.jit)
except ImportError:
    pass
