# The C++ extension (pybind11, python/src/): typed as Any here. The package's public Python layer
# (smooth, make_kernel, the estimators, kernelformer.torch) carries the annotations users see.
from typing import Any

def __getattr__(name: str) -> Any: ...
