"""Tilewave from Python: slides, every registered op on numpy arrays, and the
whole-slide jobs of the command line (docs/python.md).

    import tilewave
    with tilewave.open("slide.svs") as s:
        region = s.read_region((0, 0), 0, (512, 512))   # H x W x C, the slide's dtype
    smooth = tilewave.ops.gaussian(region, sigma=2)
    report = tilewave.pyramid("slide.svs", "out.tif", quality=80)
"""
import collections.abc as _abc
import os as _os

from . import _tilewave
from ._tilewave import DeviceArray, Slide, __version__

__all__ = ["open", "Slide", "DeviceArray", "ops", "pyramid", "run", "nuclei", "__version__"]


class AssociatedImages(_abc.Mapping):
    """A slide's associated images (label, macro, thumbnail, ...) by name,
    each read when asked for, as a numpy array H x W x C."""

    def __init__(self, slide):
        self._slide = slide

    def __getitem__(self, name):
        return self._slide._read_associated(name)

    def __iter__(self):
        return iter(self._slide._associated_names)

    def __len__(self):
        return len(self._slide._associated_names)

    def __contains__(self, name):
        return name in self._slide._associated_names

    def __repr__(self):
        return "AssociatedImages(%r)" % (list(self),)


Slide.associated_images = property(
    AssociatedImages, doc="The associated images by name, read lazily (a Mapping of numpy arrays).")


def open(path):
    """Opens a slide: a TIFF/BigTIFF, anything OpenSlide reads (SVS, NDPI,
    MRXS, ...), or ``synthetic:WxH[,seed=N][,gray][,16bit][,mpp=F]``.

    Returns a Slide (a context manager). FileNotFoundError for a missing
    file, OSError for one that cannot be read, ValueError for a bad
    ``synthetic:`` spec."""
    return _tilewave.open(_os.fspath(path))


def _options(kwargs):
    """Keywords as the CLI's options: sigma_um=0.3 -> --sigma-um=0.3; True
    -> a flag; False/None -> left out; a list or tuple -> the option
    repeated; keep={"mask": "m.tif"} -> --keep=mask=m.tif."""
    out = []
    for key, value in kwargs.items():
        name = key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append((name, ""))
        elif isinstance(value, str) and value == "":
            # An empty value would read as a flag and take the next option as
            # its value (report="" swallowed quality=50).
            raise ValueError("%s='' is empty: give a value, or None to leave it out" % key)
        elif isinstance(value, dict):
            out.extend((name, "%s=%s" % (k, _os.fspath(v))) for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            if any(_text(v) == "" for v in value):
                raise ValueError("%s: an empty value in the list" % key)
            out.extend((name, _text(v)) for v in value)
        else:
            out.append((name, _text(value)))
    return out


def _text(v):
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, _os.PathLike):
        return _os.fspath(v)
    return str(v)


def _is_file_input(src):
    return not str(src).startswith("synthetic:")


def pyramid(src, dst, *, progress=None, **options):
    """Writes a tiled pyramid of ``src`` to ``dst`` (TIFF, OME-TIFF, Deep Zoom
    or OME-Zarr by its name; ``format=`` forces), as ``tilewave pyramid SRC DST``.

    Keywords are the command's options (``tilewave pyramid --help``):
    compression, quality, subsampling, level, no_predictor, min_size, format,
    overlap, recompress, no_associated, reader, tile, memory, threads, device,
    gpu_memory, report. ``progress(fraction)`` is called as the output is
    written (0..1); raising from it (or Ctrl-C) stops the job and leaves no
    output. Returns the report (``--report``'s JSON) as a dict."""
    src, dst = _os.fspath(src), _os.fspath(dst)
    return _tilewave._run_command("pyramid", [src, dst], _options(options), progress,
                                  [src] if _is_file_input(src) else [])


def run(src, dst, steps, *, progress=None, **options):
    """Runs a chain of ops over a whole slide in one streaming pass and writes
    the last step's result, as ``tilewave run SRC DST STEP...``
    (docs/pipelines.md). ``steps`` is a list of step strings, each written as
    on the command line (``["filter gray", "filter gaussian --sigma 2",
    "edt"]``); ``pipeline="file"`` reads more from a file; ``keep={"name":
    path}`` also writes named steps' results. Other keywords, ``progress`` and the return value
    as for pyramid()."""
    src, dst = _os.fspath(src), _os.fspath(dst)
    steps = [steps] if isinstance(steps, str) else list(steps)
    return _tilewave._run_command("run", [src, dst] + steps, _options(options), progress,
                                  [src] if _is_file_input(src) else [])


def nuclei(src, outdir, *, progress=None, **options):
    """Segments a slide's nuclei into ``outdir`` (labels.tif, nuclei.csv,
    nuclei.geojson, overlay.tif), as ``tilewave nuclei SRC OUTDIR``
    (docs/nuclei.md). Keywords are its options (mpp, sigma_um,
    min_area_um2, ..., tile, memory, threads, device); ``progress`` and the
    return value as for pyramid()."""
    src, outdir = _os.fspath(src), _os.fspath(outdir)
    return _tilewave._run_command("nuclei", [src, outdir], _options(options), progress,
                                  [src] if _is_file_input(src) else [])


from . import ops  # noqa: E402  (needs _tilewave loaded)
