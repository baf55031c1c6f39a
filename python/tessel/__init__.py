"""Tessel's runtime from Python: open an engine (.tsl), look at its inputs and
outputs, run it on numpy arrays, or on GPU tensors in place.

    import numpy as np, tessel
    engine = tessel.Engine("tiny_cnn.tsl")
    context = engine.context()                      # the best tier the machine has
    (probabilities,) = context.run([np.load("tiny_cnn.input.npy")])

GPU tensors (PyTorch CUDA tensors, CuPy arrays: anything with
``__cuda_array_interface__`` or ``__dlpack__`` on CUDA device 0) are bound
without copies: ``context.run_device(inputs, outputs)`` runs with the kernels
reading and writing them in place, and ``context.enqueue(inputs, outputs,
stream)`` queues the run on a CUDA stream without waiting (0: CUDA's
default stream, PyTorch's).

The module is ctypes over the C API (libtessel_runtime.so.0): no compiled
extension, so it works with any Python 3 and numpy, and the shared library's
ABI stays the C API (docs/architecture.md says why). The library is found
through $TESSEL_RUNTIME_LIBRARY, next to this file, or the loader's search
path (the libtessel-runtime0 package installs it in /usr/lib).
"""
import ctypes
import ctypes.util
import os

import numpy as np

__all__ = ["Engine", "Context", "TensorInfo", "Error", "TIERS", "library_path"]

# tessel_tier_t
TIERS = {"auto": 0, "cpu": 1, "simt": 2, "tc": 3, "tc-sm70": 4, "tc-sm80": 5}
# tessel_dtype_t -> numpy (bf16 has no numpy dtype: its tensors are moved as
# raw uint16).
_DTYPES = [np.float32, np.float16, np.float64, np.uint16, np.int8, np.int16, np.int32,
           np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]
_DTYPE_NAMES = ["f32", "f16", "f64", "bf16", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
                "u64", "bool"]


class Error(RuntimeError):
    """A failed C API call: `code` is its tessel_status_code_t."""

    CODES = {1: "invalid argument", 2: "invalid engine", 3: "unsupported", 4: "io error",
             5: "out of memory", 6: "internal"}

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class _TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_size_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("layout", ctypes.c_char_p),
                ("size_bytes", ctypes.c_size_t)]


class _ContextOptions(ctypes.Structure):
    _fields_ = [("tier", ctypes.c_int)]


def library_path():
    """Where the runtime library is taken from: $TESSEL_RUNTIME_LIBRARY, a
    copy next to this file, or the name the loader resolves."""
    env = os.environ.get("TESSEL_RUNTIME_LIBRARY")
    if env:
        return env
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libtessel_runtime.so.0")
    if os.path.exists(here):
        return here
    return ctypes.util.find_library("tessel_runtime") or "libtessel_runtime.so.0"


def _load():
    lib = ctypes.CDLL(library_path())
    status, handle, size = ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t
    signatures = {
        "tessel_status_code": (ctypes.c_int, [status]),
        "tessel_status_message": (ctypes.c_char_p, [status]),
        "tessel_status_free": (None, [status]),
        "tessel_engine_open_file": (status, [ctypes.c_char_p, ctypes.POINTER(handle)]),
        "tessel_engine_release": (None, [handle]),
        "tessel_engine_input_count": (size, [handle]),
        "tessel_engine_output_count": (size, [handle]),
        "tessel_engine_input_info": (status, [handle, size, ctypes.POINTER(_TensorInfo)]),
        "tessel_engine_output_info": (status, [handle, size, ctypes.POINTER(_TensorInfo)]),
        "tessel_engine_output_dynamic_axis": (ctypes.c_int64, [handle, size]),
        "tessel_context_output_shape": (status, [handle, size, ctypes.POINTER(ctypes.c_int64),
                                                 size]),
        "tessel_engine_profile_count": (size, [handle]),
        "tessel_engine_profile": (status, [handle, size, ctypes.POINTER(handle)]),
        "tessel_engine_find_profile": (status, [handle, size, ctypes.POINTER(ctypes.c_int64),
                                                size, ctypes.POINTER(size)]),
        "tessel_context_create": (status, [handle, ctypes.POINTER(_ContextOptions),
                                           ctypes.POINTER(handle)]),
        "tessel_context_release": (None, [handle]),
        "tessel_context_bind_input": (status, [handle, size, ctypes.c_void_p, size]),
        "tessel_context_bind_output": (status, [handle, size, ctypes.c_void_p, size]),
        "tessel_context_bind_input_device": (status, [handle, size, ctypes.c_uint64, size]),
        "tessel_context_bind_output_device": (status, [handle, size, ctypes.c_uint64, size]),
        "tessel_context_run": (status, [handle]),
        "tessel_context_enqueue": (status, [handle, ctypes.c_void_p]),
        "tessel_context_stream": (status, [handle, ctypes.POINTER(ctypes.c_void_p)]),
        "tessel_context_tier": (ctypes.c_char_p, [handle]),
        "tessel_context_tier_summary": (ctypes.c_char_p, [handle]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


_lib = _load()


def _check(status):
    if status:
        code = _lib.tessel_status_code(status)
        message = _lib.tessel_status_message(status).decode()
        _lib.tessel_status_free(status)
        raise Error(code, message)


class TensorInfo:
    """A graph input or output: name, dtype (a numpy dtype; bf16 as uint16
    with dtype_name "bf16"), shape, layout ("NCHW", "NHWC" or ""), size in
    bytes; for an output whose extent along one axis is data dependent
    (NonMaxSuppression's rows), dynamic_axis (else None) and shape is its
    bound."""

    def __init__(self, raw, dynamic_axis=-1):
        self.dynamic_axis = None if dynamic_axis < 0 else dynamic_axis
        self.name = raw.name.decode()
        self.dtype_name = _DTYPE_NAMES[raw.dtype]
        self.dtype = np.dtype(_DTYPES[raw.dtype])
        self.shape = tuple(raw.shape[d] for d in range(raw.rank))
        self.layout = raw.layout.decode()
        self.size_bytes = raw.size_bytes

    def __repr__(self):
        return "TensorInfo(%r, %s, %s, %r)" % (self.name, self.dtype_name, list(self.shape),
                                               self.layout)


class Engine:
    """An opened, verified engine file (one of its batch profiles: profile 0
    when opened; profile(i) or find_profile(shape) for the others)."""

    def __init__(self, path=None, _handle=None):
        self._handle = ctypes.c_void_p()
        if _handle is not None:
            self._handle = _handle
        else:
            _check(_lib.tessel_engine_open_file(os.fsencode(path), ctypes.byref(self._handle)))
        self.inputs = self._infos(_lib.tessel_engine_input_count, _lib.tessel_engine_input_info)
        self.outputs = self._infos(_lib.tessel_engine_output_count,
                                   _lib.tessel_engine_output_info,
                                   _lib.tessel_engine_output_dynamic_axis)

    def _infos(self, count, info, dynamic_axis=None):
        result = []
        for i in range(count(self._handle)):
            raw = _TensorInfo()
            _check(info(self._handle, i, ctypes.byref(raw)))
            result.append(TensorInfo(raw, dynamic_axis(self._handle, i) if dynamic_axis else -1))
        return result

    @property
    def profile_count(self):
        return _lib.tessel_engine_profile_count(self._handle)

    def profile(self, index):
        """The engine's batch profile `index`, as an Engine."""
        handle = ctypes.c_void_p()
        _check(_lib.tessel_engine_profile(self._handle, index, ctypes.byref(handle)))
        return Engine(_handle=handle)

    def find_profile(self, shape, input=0):
        """The first profile whose input `input` has exactly `shape`."""
        dims = (ctypes.c_int64 * len(shape))(*shape)
        index = ctypes.c_size_t()
        _check(_lib.tessel_engine_find_profile(self._handle, input, dims, len(shape),
                                               ctypes.byref(index)))
        return self.profile(index.value)

    def context(self, tier="auto"):
        """A context (its own buffers) on `tier`: auto, cpu, simt, tc,
        tc-sm70 or tc-sm80."""
        return Context(self, tier)

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.tessel_engine_release(self._handle)
            self._handle = None


def _device_pointer(tensor):
    """(address, bytes, dtype, shape) of a CUDA tensor on device 0, through
    __cuda_array_interface__ (PyTorch, CuPy, Numba) or, failing that,
    __dlpack__ (read through PyTorch's from_dlpack, a view of the same
    memory)."""
    interface = getattr(tensor, "__cuda_array_interface__", None)
    # DLPack device type 2 is kDLCUDA (numpy arrays say 1, the CPU).
    if (interface is None and hasattr(tensor, "__dlpack_device__")
            and tensor.__dlpack_device__()[0] == 2):
        # DLPack producers (JAX, ...) that lack the CUDA array interface:
        # torch.from_dlpack gives a view with it, on the same memory.
        import torch
        interface = torch.from_dlpack(tensor).__cuda_array_interface__
    if interface is None:
        raise TypeError("not a CUDA tensor (no __cuda_array_interface__ or __dlpack__): %r"
                        % type(tensor))
    address = interface["data"][0]
    dtype = np.dtype(interface["typestr"])
    shape = tuple(interface["shape"])
    strides = interface.get("strides")
    if strides is not None and strides != tuple(
            int(np.prod(shape[d + 1:])) * dtype.itemsize for d in range(len(shape))):
        raise ValueError("the CUDA tensor is not contiguous: bind a contiguous one")
    return address, int(np.prod(shape)) * dtype.itemsize, dtype, shape


class Context:
    """The buffers and state of one run at a time (one thread at a time)."""

    def __init__(self, engine, tier="auto"):
        if tier not in TIERS:
            raise ValueError("tier must be one of %s, not %r" % (", ".join(TIERS), tier))
        self.engine = engine  # kept alive: the context uses the engine's data
        self._handle = ctypes.c_void_p()
        options = _ContextOptions(TIERS[tier])
        _check(_lib.tessel_context_create(engine._handle, ctypes.byref(options),
                                          ctypes.byref(self._handle)))
        self._bound = []

    @property
    def tier(self):
        """"cpu", "simt", "tc-sm70", "tc-sm80", "tc-sm90" or "mixed"."""
        return _lib.tessel_context_tier(self._handle).decode()

    @property
    def tier_summary(self):
        return _lib.tessel_context_tier_summary(self._handle).decode()

    def run(self, inputs):
        """Runs on host arrays (a list in input order, or a dict by name);
        returns the outputs as new numpy arrays (a data-dependent output cut
        to the extent this run found)."""
        if isinstance(inputs, dict):
            inputs = [inputs[info.name] for info in self.engine.inputs]
        if len(inputs) != len(self.engine.inputs):
            raise ValueError("the engine has %d inputs, %d given"
                             % (len(self.engine.inputs), len(inputs)))
        held = []
        for i, (info, array) in enumerate(zip(self.engine.inputs, inputs)):
            array = np.ascontiguousarray(array)
            if array.dtype != info.dtype or array.shape != info.shape:
                raise ValueError("input %d '%s' is %s%s, the engine takes %s%s"
                                 % (i, info.name, array.dtype, list(array.shape), info.dtype,
                                    list(info.shape)))
            held.append(array)
            _check(_lib.tessel_context_bind_input(self._handle, i, array.ctypes.data,
                                                  array.nbytes))
        outputs = [np.empty(info.shape, info.dtype) for info in self.engine.outputs]
        for i, array in enumerate(outputs):
            _check(_lib.tessel_context_bind_output(self._handle, i, array.ctypes.data,
                                                   array.nbytes))
        _check(_lib.tessel_context_run(self._handle))
        for i, info in enumerate(self.engine.outputs):
            if info.dynamic_axis is not None:
                shape = self.output_shape(i)
                outputs[i] = outputs[i].reshape(-1)[:int(np.prod(shape))].reshape(shape)
        return outputs

    def output_shape(self, index):
        """Output `index`'s shape after the last run: a data-dependent axis
        holds the extent that run found (after enqueue, it waits for it)."""
        rank = len(self.engine.outputs[index].shape)
        dims = (ctypes.c_int64 * rank)()
        _check(_lib.tessel_context_output_shape(self._handle, index, dims, rank))
        return tuple(dims)

    def _bind_device(self, inputs, outputs):
        for kind, infos, tensors, bind in (
                ("input", self.engine.inputs, inputs, _lib.tessel_context_bind_input_device),
                ("output", self.engine.outputs, outputs,
                 _lib.tessel_context_bind_output_device)):
            if len(tensors) != len(infos):
                raise ValueError("the engine has %d %ss, %d given" % (len(infos), kind,
                                                                     len(tensors)))
            for i, (info, tensor) in enumerate(zip(infos, tensors)):
                address, size, dtype, shape = _device_pointer(tensor)
                if dtype != info.dtype or shape != info.shape:
                    raise ValueError("%s %d '%s' is %s%s, the engine's is %s%s"
                                     % (kind, i, info.name, dtype, list(shape), info.dtype,
                                        list(info.shape)))
                _check(bind(self._handle, i, address, size))
        # The tensors must outlive the work: keep them until the next bind.
        self._bound = list(inputs) + list(outputs)

    def run_device(self, inputs, outputs):
        """Runs with CUDA tensors bound in place (no copies): the kernels read
        `inputs` and write `outputs` (contiguous, the engine's dtypes and
        shapes, on device 0); returns when the outputs are written."""
        self._bind_device(inputs, outputs)
        _check(_lib.tessel_context_run(self._handle))

    def enqueue(self, inputs, outputs, stream):
        """As run_device, queued on `stream` (a CUstream handle as an int, or
        an object with `cuda_stream`, as torch.cuda.Stream has) without
        waiting; synchronize the stream before reading the outputs. 0 is
        CUDA's default stream (PyTorch's default stream), as everywhere in
        CUDA; the context's own stream is `context.stream`."""
        self._bind_device(inputs, outputs)
        handle = getattr(stream, "cuda_stream", stream)
        _check(_lib.tessel_context_enqueue(self._handle, ctypes.c_void_p(handle)))

    @property
    def stream(self):
        """The context's own CUstream handle (an int), where run() works."""
        handle = ctypes.c_void_p()
        _check(_lib.tessel_context_stream(self._handle, ctypes.byref(handle)))
        return handle.value or 0

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.tessel_context_release(self._handle)
            self._handle = None
