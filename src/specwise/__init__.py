"""specwise: will speculative decoding make your vLLM deployment faster or slower?"""

from specwise.errors import SpecwiseError

__all__ = ["SpecwiseError", "__version__"]
__version__ = "0.1.0"
