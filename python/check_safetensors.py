#!/usr/bin/env python3
"""Reads a .safetensors file with the rules of the safetensors library (huggingface/safetensors,
which is not packaged for Debian bookworm): an 8-byte little-endian header length, a JSON object
whose __metadata__ maps strings to strings, known dtypes, and tensors whose byte ranges tile the
data section in order with no gap or overlap. Prints each tensor and loads it into PyTorch
(torch.from_numpy) when torch is importable, as safetensors.torch.load_file would.

    /usr/bin/python3 python/check_safetensors.py MODEL.safetensors
Exit 0 when the file is valid; 1 with the reason otherwise.
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
          "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def load(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    buf = data[8 + n:]
    meta = header.pop("__metadata__", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise ValueError("__metadata__ must map strings to strings")
    entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"])
    at = 0
    tensors = {}
    for name, e in entries:
        b0, b1 = e["data_offsets"]
        if b0 != at:
            raise ValueError(f"{name}: starts at {b0}, expected {at} (gap or overlap)")
        dt = np.dtype(DTYPES[e["dtype"]]).newbyteorder("<")
        count = int(np.prod(e["shape"], dtype=np.int64))
        if b1 - b0 != count * dt.itemsize:
            raise ValueError(f"{name}: {b1 - b0} bytes for shape {e['shape']}")
        tensors[name] = np.frombuffer(buf[b0:b1], dtype=dt).reshape(e["shape"])
        at = b1
    if at != len(buf):
        raise ValueError(f"the tensors cover {at} of {len(buf)} data bytes")
    return meta, tensors


def main():
    meta, tensors = load(sys.argv[1])
    try:
        import torch
        state = {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
        print(f"torch: {len(state)} tensors loaded")
    except ImportError:
        pass
    for k, v in tensors.items():
        print(f"{k}: {v.dtype} {list(v.shape)}")
    print(f"metadata: {len(meta)} keys")


if __name__ == "__main__":
    try:
        main()
    except (ValueError, KeyError, json.JSONDecodeError, struct.error) as e:
        print(f"{sys.argv[1]}: not a valid safetensors file: {e}", file=sys.stderr)
        sys.exit(1)
