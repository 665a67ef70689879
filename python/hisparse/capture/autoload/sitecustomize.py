"""Starts a hisparse top-k capture in every Python process of a server, when HISPARSE_CAPTURE is set.

Put this directory first on PYTHONPATH (docs/capture.md). It shadows any other sitecustomize module, so it runs
that one too (found further down sys.path) before installing the capture hook. The hook only patches the engine's
coordinator class when the engine imports it; nothing heavy is imported here.
"""
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _chain_other_sitecustomize():
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == _here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_hisparse_chained_sitecustomize", candidate)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


_chain_other_sitecustomize()

if os.environ.get("HISPARSE_CAPTURE", "").strip():
    _python_dir = os.path.dirname(os.path.dirname(os.path.dirname(_here)))  # .../python (holds hisparse/)
    if _python_dir not in sys.path:
        sys.path.append(_python_dir)
    _engine = os.environ.get("HISPARSE_CAPTURE_ENGINE", "sglang").strip()
    if _engine == "sglang":
        from hisparse.capture import sglang as _hook
    elif _engine == "vllm":
        from hisparse.capture import vllm as _hook
    else:
        raise SystemExit(f"HISPARSE_CAPTURE_ENGINE={_engine!r}: expected sglang or vllm")
    try:
        _hook.install_from_env()
    except (ValueError, RuntimeError) as _e:  # a bad setting stops the process at start, as the engine check does
        raise SystemExit(f"hisparse capture: {_e}") from None
