"""Top-k trace capture from serving engines (pure Python + numpy; no compiled code).

- `native_writer.NativeTraceWriter`: the native trace format (traces/FORMAT.md), incremental, bounded memory,
  atomic final rename;
- `recorder.TopkRecorder`: assembles per-layer swap-in calls into per-request steps;
- `sglang`, `vllm`: hooks at each engine's HiSparse swap-in call site (docs/capture.md).
"""

from .native_writer import NativeTraceWriter, TraceWriteError
from .recorder import TopkRecorder

__all__ = ["NativeTraceWriter", "TraceWriteError", "TopkRecorder"]
