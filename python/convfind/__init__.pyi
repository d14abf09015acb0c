"""Type stubs of the convfind package's public API (convfind/__init__.py)."""

from typing import Any, Literal, Optional, Sequence, Union

from ._convfind import (
    BackendError as BackendError,
    ContextBase,
    Error as Error,
    FileIOError as FileIOError,
    FindResult as FindResult,
    InvalidAttributeError as InvalidAttributeError,
    InvalidEnumError as InvalidEnumError,
    InvalidRankError as InvalidRankError,
    InvalidShapeError as InvalidShapeError,
    NotFoundError as NotFoundError,
    NullPointerError as NullPointerError,
    OutOfMemoryError as OutOfMemoryError,
    Plan as Plan,
    SizeOverflowError as SizeOverflowError,
    UnavailableError as UnavailableError,
    UnsupportedError as UnsupportedError,
    algorithms as algorithms,
    cuda_available as cuda_available,
    version as version,
)

__version__: str
Shape = Sequence[int]
ArrayOrShape = Union[Any, Shape]

class Context(ContextBase):
    threads: int
    policy: str
    device: str
    math: str
    def __init__(self, threads: int = 0,
                 policy: Literal["default", "hybrid", "exhaustive", "heuristic", "replay",
                                 "deferred"] = "default",
                 db: Optional[Any] = None, device: str = "cpu",
                 math: Literal["strict", "tf32", "split_tf32"] = "strict", *, system_db: Optional[Any] = None,
                 db_env_policy: Literal["retune", "ignore"] = "retune", workspace_limit: int = 0,
                 cache_bytes: int = 0, find_time_budget: float = 0.0,
                 find_validate: bool = True) -> None: ...
    def conv(self, x: Any, w: Any, b: Any = None, z: Any = None, *, out: Any = None,
             stream: Optional[int] = None, op: str = "conv", pads: Optional[Shape] = None,
             strides: Optional[Shape] = None, dilations: Optional[Shape] = None,
             group: int = 1, auto_pad: str = "notset", kernel_shape: Optional[Shape] = None,
             output_padding: Optional[Shape] = None, output_shape: Optional[Shape] = None,
             activation: Optional[str] = None, alpha: Optional[float] = None,
             beta: Optional[float] = None, layout: str = "nchw",
             math: Optional[Literal["strict", "tf32", "split_tf32"]] = None) -> Any: ...
    def plan(self, x: ArrayOrShape, w: ArrayOrShape, b: Any = None, z: Any = None, *,
             algorithm: Optional[str] = None, dtype: Any = None, **attributes: Any) -> Plan: ...
    def find(self, x: ArrayOrShape, w: ArrayOrShape, b: Any = None, z: Any = None, *,
             dtype: Any = None, weights: Optional[Literal["constant", "per_call"]] = None,
             **attributes: Any) -> list[FindResult]: ...
    def key(self, x: ArrayOrShape, w: ArrayOrShape, b: Any = None, z: Any = None, *,
            dtype: Any = None, weights: Optional[Literal["constant", "per_call"]] = None,
            **attributes: Any) -> str: ...

def default_context() -> Context: ...
def conv(x: Any, w: Any, b: Any = None, z: Any = None, **kwargs: Any) -> Any: ...
