"""Load generation against OpenAI-compatible servers (the I/O edge): client, runner, result store."""
