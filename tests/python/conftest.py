"""pytest setup shared by tests/python: the source tree's python/ is appended to sys.path, so the capture modules
(pure Python + numpy) import without an installed package; an installed `hisparse` still comes first."""
import os
import sys

_PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "python")
if _PYTHON_DIR not in sys.path:
    sys.path.append(_PYTHON_DIR)
