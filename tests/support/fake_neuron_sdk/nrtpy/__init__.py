"""Stand-in for the Neuron runtime's Python layer, nrtpy (tests only; see ../README.md)."""
import json
import os


class NrtError(RuntimeError):
    pass


class TensorMetadata:
    def __init__(self, shape):
        self.shape = tuple(shape)
        self.size = 1
        for extent in shape:
            self.size *= extent


class NrtpyTensor:
    def __init__(self, array, name=None):
        self.array = array
        self.name = name

    @classmethod
    def from_numpy(cls, array, name=None, core_id=0):
        return cls(array.copy(), name)

    def numpy(self):
        return self.array


class BenchmarkResult:
    def __init__(self, mean_ms, iterations):
        self.mean_ms = self.min_ms = self.max_ms = mean_ms
        self.std_dev_ms = 0.0
        self.iterations = iterations


class NrtpyModel:
    def __init__(self, neff):
        self.neff = neff
        self.input_tensors_info = {n: TensorMetadata(s) for n, s in zip(neff["inputs"], neff["shapes"])}
        self.output_tensors_info = {}

    @classmethod
    def load_from_neff(cls, neff_path, name=None, core_id=0, cc_enabled=False, rank_id=0, world_size=1):
        try:
            with open(neff_path) as f:
                neff = json.load(f)
        except (OSError, ValueError) as e:
            raise NrtError(f"NRT_FAILURE(6): cannot load {neff_path}: {e}")
        if not neff.get("fake_neff"):
            raise NrtError(f"NRT_FAILURE(6): {neff_path} is not a NEFF of the fake SDK")
        return cls(neff)

    def benchmark(self, inputs, outputs=None, warmup_iter=5, benchmark_iter=5, mode="device"):
        if mode not in ("device", "host"):
            raise ValueError(f"mode must be 'device' or 'host', not {mode!r}")
        if benchmark_iter < 1:
            raise ValueError("benchmark_iter must be at least 1")
        if sorted(inputs) != sorted(self.input_tensors_info):
            raise NrtError(f"input names {sorted(inputs)} do not match {sorted(self.input_tensors_info)}")
        for name, tensor in inputs.items():
            if tuple(tensor.array.shape) != self.input_tensors_info[name].shape:
                raise NrtError(f"input {name}: shape {tensor.array.shape}, the NEFF's {self.input_tensors_info[name].shape}")
        log = os.environ.get("FAKE_NRTPY_LOG")
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"warmup_iter": warmup_iter, "benchmark_iter": benchmark_iter, "mode": mode,
                                    "inputs": sorted(inputs)}) + "\n")
        return BenchmarkResult(float(os.environ.get("FAKE_NRTPY_DEVICE_MS", "0.25")), benchmark_iter)
