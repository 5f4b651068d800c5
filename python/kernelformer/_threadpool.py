"""kernelformer's thread pool as threadpoolctl sees it: threadpool_info() lists it (user_api
"kernelformer") and threadpool_limits(n) (or user_api="kernelformer") limits every later call
of the library, as scikit-learn users expect of a compiled dependency. The library's threads are
its OpenMP team: the controller sets kernelformer.set_num_threads, which every call reads.

threadpoolctl >= 3.2 has register(); Debian bookworm's 3.1 reads a table of supported
libraries, where the controller is added the same way its own are described.
"""
import threadpoolctl

from . import _kernelformer as _kf


class KernelformerController(threadpoolctl.LibController):
    user_api = "kernelformer"
    internal_api = "kernelformer"
    filename_prefixes = ("_kernelformer",)

    def __init__(self, **kwargs):
        kwargs.setdefault("user_api", self.user_api)
        kwargs.setdefault("internal_api", self.internal_api)
        super().__init__(**kwargs)

    def get_num_threads(self):
        return _kf.get_num_threads()

    def set_num_threads(self, num_threads):
        _kf.set_num_threads(int(num_threads))

    def get_version(self):
        return _kf.__version__


def register():
    if hasattr(threadpoolctl, "register"):
        threadpoolctl.register(KernelformerController)
        return
    table = getattr(threadpoolctl, "_SUPPORTED_LIBRARIES", None)
    if table is None or "KernelformerController" in table:
        return
    table["KernelformerController"] = {
        "user_api": "kernelformer", "internal_api": "kernelformer",
        "filename_prefixes": KernelformerController.filename_prefixes}
    setattr(threadpoolctl, "KernelformerController", KernelformerController)
    for name in ("_ALL_USER_APIS", "_ALL_INTERNAL_APIS"):
        apis = getattr(threadpoolctl, name, None)
        if isinstance(apis, list) and "kernelformer" not in apis:
            apis.append("kernelformer")
