"""Every registered op as a function on arrays, generated from the engine's
registry (engine/op_registry.hpp): ``tilewave.ops.gaussian(a, sigma=2)``.

Images are numpy arrays H x W or H x W x C of uint8, uint16, int32, uint32 or
float32 (anything else numpy can make an array of is converted with
np.asarray first). Arrays in GPU memory -- CuPy, PyTorch on CUDA, anything
with __cuda_array_interface__ or a CUDA DLPack tensor -- are read where they
lie, the op runs on their GPU, and the result comes back on it, as the same
kind of array, with no copy through the host for the GPU ops' chains (see
docs/python.md). Parameters are keywords named as the command line's
options with '-' as '_' (``min_area=``, ``exclude_border=``; a Python
keyword gets a trailing '_': ``from_=``), checked by the same parser, so a
bad value is a ValueError with the CLI's message. Every op also takes
``device`` ("cpu", the default for numpy arrays; "cuda", "cuda:N", the
default for GPU arrays: their own GPU; or "auto"), ``memory``
(bytes, or "512M"), ``tile`` and ``threads``. An op that makes an image
returns a new array (H x W when the result has one channel, else H x W x C);
a reduction returns a dict of its figures.
"""
import inspect as _inspect
import keyword as _keyword

import numpy as _np

from . import _tilewave

_OPTIONS = (("device", None), ("memory", None), ("tile", None), ("threads", None))


def _pyname(name, taken=()):
    name = name.replace("-", "_")
    if _keyword.iskeyword(name) or name in taken:
        name += "_"
    return name


def _on_gpu(x):
    """Whether x's pixels are in GPU memory (the engine reads them there)."""
    if hasattr(x, "__cuda_array_interface__"):
        return True
    try:
        return x.__dlpack_device__()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged
    except (AttributeError, TypeError):
        return False


def _image_arg(x, name):
    """An image argument as the engine takes it: numpy and GPU arrays as they
    are (read in place), a CPU DLPack tensor through np.from_dlpack, anything
    else through np.asarray. None is a missing image (TypeError)."""
    if x is None:
        raise TypeError("%s: an image is required, not None" % name)
    if isinstance(x, _np.ndarray) or _on_gpu(x):
        return x
    if hasattr(x, "__dlpack__"):
        return _np.from_dlpack(x)
    return _np.asarray(x)


def _give_back(result, like):
    """A result in GPU memory (tilewave.DeviceArray) as the kind of array the
    caller gave, wrapping the same memory: CuPy and PyTorch take it without
    a copy; for others the DeviceArray itself exports both protocols."""
    if like is None or not isinstance(result, _tilewave.DeviceArray):
        return result
    module = type(like).__module__.split(".")[0]
    if module == "cupy":
        import cupy
        return cupy.asarray(result)
    if module == "torch":
        import torch
        return torch.from_dlpack(result)
    return result


def _value_text(value):
    if isinstance(value, _np.generic):
        value = value.item()
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _doc(op, images, params):
    lines = [op["summary"], ""]
    if op["help"] and op["help"] != op["summary"]:
        lines += [op["help"], ""]
    lines.append("Command line: tilewave %s%s" % (" ".join(op["command"]), (" " + op["usage"]) if op["usage"] else ""))
    if op["takes"]:
        lines.append("Input: %s." % op["takes"])
    lines += ["", "Images: " + ", ".join(images) + " (arrays H x W or H x W x C: numpy, or CuPy/DLPack on a GPU)."]
    if params:
        lines += ["", "Parameters:"]
    for p in params:
        if p["kind"] == "image":
            what = "an optional image (array)"
        elif p["kind"] == "flag":
            what = "True/False"
        elif p["kind"] == "choice":
            what = "one of " + ", ".join(p["choices"])
        elif p["kind"] in ("real", "integer"):
            what = "%s %g..%g" % (p["kind"], p["lo"], p["hi"])
        else:
            what = "text"
        extra = ", required" if p["required"] else (", default %s" % p["default"] if p["default"] else "")
        lines.append("  %s (%s%s): %s" % (p["py"], what, extra, p["help"]))
    lines += ["", "Options: device='cpu'|'cuda'|'cuda:N'|'auto' (default: 'cpu', or a GPU array's own GPU), "
              "memory=bytes or '512M', tile=N, threads=N."]
    lines.append("Returns: " + ("a new array: numpy for numpy inputs; for GPU inputs on their GPU, of their kind."
                                if op["image_result"] else "a dict of the op's figures."))
    return "\n".join(lines)


def _make(op):
    images = []
    for name in op["inputs"]:
        images.append(_pyname(name, images))
    params = []
    for p in op["params"]:
        p = dict(p)
        p["py"] = _pyname(p["name"], images + [q["py"] for q in params] + [o for o, _ in _OPTIONS])
        params.append(p)
    by_name = {p["name"]: p for p in params}
    optional = [by_name[n] for n in op["optional_inputs"]]
    P = _inspect.Parameter
    sig = _inspect.Signature(
        [P(n, P.POSITIONAL_OR_KEYWORD) for n in images]
        + [P(p["py"], P.KEYWORD_ONLY, default=None) for p in params]
        + [P(n, P.KEYWORD_ONLY, default=d) for n, d in _OPTIONS])

    def op_function(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)  # TypeError: a missing image, an unknown keyword
        bound.apply_defaults()
        a = bound.arguments
        arrays, names, like = [], [], None
        for n in images + [p["py"] for p in optional if a[p["py"]] is not None]:
            arr = _image_arg(a[n], n)
            if like is None and not isinstance(arr, _np.ndarray):
                like = arr
            arrays.append(arr)
            names.append(n)
        values = {}
        for p in params:
            v = a[p["py"]]
            if v is None:
                continue
            if p["kind"] == "image":
                values[p["name"]] = p["name"]
            elif p["kind"] == "flag":
                if not isinstance(v, (bool, _np.bool_)):
                    raise ValueError("%s: %s is a flag: True or False, not %r" % (op["name"], p["py"], v))
                if v:
                    values[p["name"]] = "1"
            else:
                values[p["name"]] = _value_text(v)
        options = [(n, _value_text(a[n])) for n, _ in _OPTIONS if a[n] is not None]
        for n, v in options:
            if v == "":
                raise ValueError("%s: %s='' is empty: give a value, or None to leave it out" % (op["name"], n))
        out = _tilewave._run_op(op["name"], arrays, names, values, options, True)
        return _give_back(out, like)

    op_function.__name__ = op_function.__qualname__ = op["pyname"]
    op_function.__module__ = __name__
    op_function.__signature__ = sig
    op_function.__doc__ = _doc(op, images, params)
    op_function.registry_name = op["name"]
    op_function._params = [dict(p, pyname=p["py"]) for p in params]
    op_function._image_result = op["image_result"]
    return op_function


__all__ = []
for _op in _tilewave._op_table():
    globals()[_op["pyname"]] = _make(_op)
    __all__.append(_op["pyname"])
del _op
