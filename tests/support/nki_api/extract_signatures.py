"""Writes the documented signatures of nki.isa and nki.language as JSON, read from the API stub files of the
Neuron SDK documentation (aws-neuron-sdk, nki/api/nki/{isa,language}/__init__.py: every function with its
parameters and defaults as the documentation declares them). The strict NKI stand-in
(tests/support/nki_standin/nki) checks every call against this file.

    python3 tests/support/nki_api/extract_signatures.py SDK_CHECKOUT COMMIT > tests/support/nki_api/signatures.json
"""
import ast
import json
import os
import sys


def functions(path):
    tree = ast.parse(open(path).read())
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        args = node.args
        params = []
        positional = args.posonlyargs + args.args
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for arg, default in zip(positional, defaults):
            params.append({"name": arg.arg, "default": None if default is None else ast.unparse(default)})
        if args.vararg:
            params.append({"name": "*" + args.vararg.arg, "default": None})
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            params.append({"name": arg.arg, "keyword_only": True,
                           "default": None if default is None else ast.unparse(default)})
        if args.kwarg:
            params.append({"name": "**" + args.kwarg.arg, "default": None})
        out[node.name] = params
    return out


def main():
    sdk, commit = sys.argv[1], sys.argv[2]
    api = os.path.join(sdk, "nki", "api", "nki")
    doc = {"source": "aws-neuron/aws-neuron-sdk nki/api/nki (NKI 0.6.0, Neuron 2.32.0)", "commit": commit,
           "nki": functions(os.path.join(api, "__init__.py")),
           "nki.isa": functions(os.path.join(api, "isa", "__init__.py")),
           "nki.language": functions(os.path.join(api, "language", "__init__.py"))}
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
