import os
import sys

# The built package (build/python), unless the caller points elsewhere.
HERE = os.path.dirname(os.path.abspath(__file__))
BUILT = os.environ.get("ZYNTAX_PYTHON_DIR", os.path.join(HERE, "..", "..", "build", "python"))
sys.path.insert(0, os.path.abspath(BUILT))
