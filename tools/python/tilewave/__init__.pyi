# Type stub of the tilewave package (docs/python.md). tilewave/ops.pyi, the
# ops' signatures, is generated from the registry at build time.
import os
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import ops as ops

__version__: str

PathLike = Union[str, os.PathLike]
Progress = Optional[Callable[[float], Any]]

class AssociatedImages(Mapping[str, np.ndarray]):
    def __getitem__(self, name: str) -> np.ndarray: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...

class DeviceArray:
    """An op's result in GPU memory (exports __cuda_array_interface__ and DLPack)."""
    shape: Tuple[int, ...]
    dtype: np.dtype
    device: int
    ptr: int
    __cuda_array_interface__: dict
    def __dlpack__(self, **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def get(self) -> np.ndarray: ...

class Slide:
    path: str
    closed: bool
    dimensions: Tuple[int, int]
    level_count: int
    level_dimensions: Tuple[Tuple[int, int], ...]
    level_downsamples: Tuple[float, ...]
    mpp: Optional[Tuple[float, float]]
    dtype: np.dtype
    channels: int
    properties: dict
    associated_images: AssociatedImages
    def read_region(self, location: Tuple[int, int], level: int, size: Tuple[int, int]) -> np.ndarray: ...
    def get_best_level_for_downsample(self, downsample: float) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Slide": ...
    def __exit__(self, *args: Any) -> None: ...

def open(path: PathLike) -> Slide: ...
def pyramid(src: PathLike, dst: PathLike, *, progress: Progress = ..., **options: Any) -> dict: ...
def run(src: PathLike, dst: PathLike, steps: Union[str, Sequence[str]], *, progress: Progress = ...,
        **options: Any) -> dict: ...
def nuclei(src: PathLike, outdir: PathLike, *, progress: Progress = ..., **options: Any) -> dict: ...
