"""A stand-in for the Neuron SDK's `neuronxcc` package, for tests only.

It is NOT the Neuron compiler: it runs the few `nki` calls that `autotune export --nki` emits on numpy arrays,
eagerly, in float32, so that the tests can check an exported kernel computes what its family's reference
computes. It models no timing, no memory limits and no engine; on a Trainium host the real package is used.
"""
